#include "support/real_run.hpp"

#include <chrono>
#include <fstream>
#include <regex>

namespace testsupport {

nlohmann::json small_scenario(const std::string& name, int nodes, int requests, int output_tokens,
                              const std::string& recovery, const std::string& link) {
  nlohmann::json cluster_nodes = nlohmann::json::array();
  for (int i = 0; i < nodes; ++i)
    cluster_nodes.push_back({{"name", "m" + std::to_string(i + 1)}, {"hardware", "m3-ultra-512gb"}});
  return {{"name", name},
          {"description", "real-process test"},
          {"seed", 1},
          {"cluster", {{"nodes", cluster_nodes}, {"fabric", {{"type", "full-mesh"}, {"link", link}}}}},
          {"model", {{"name", "llama-3.2-3b"}, {"quant", "8bit"}}},
          {"parallelism", "tensor"},
          {"workload", {{"requests", requests}, {"prompt_tokens", 32}, {"output_tokens", output_tokens}}},
          // Under ctest -j on a loaded 2-core machine a rank can go unscheduled for
          // hundreds of milliseconds: a live one must not be taken for dead.
          {"recovery", {{"policy", recovery}, {"heartbeat_s", 0.1}, {"heartbeat_timeout_s", 2.0}}},
          {"deadline_s", 120}};
}

std::string write_json(const std::string& dir, const std::string& name, const nlohmann::json& j) {
  const std::string path = dir + "/" + name + ".json";
  std::ofstream(path) << j.dump(2);
  return path;
}

std::vector<pid_t> rank_pids(const std::string& launch_output, int world) {
  std::vector<pid_t> pids(world, -1);
  static const std::regex line(R"(launch: rank (\d+) is pid (\d+))");
  for (std::sregex_iterator it(launch_output.begin(), launch_output.end(), line), end; it != end; ++it) {
    const int r = std::stoi((*it)[1]);
    if (r >= 0 && r < world) pids[r] = static_cast<pid_t>(std::stol((*it)[2]));
  }
  return pids;
}

double clock_zero_unix_s(const std::string& output) {
  static const std::regex zero(R"(run clock zero at unix ([0-9.]+))");
  std::smatch m;
  return std::regex_search(output, m, zero) ? std::stod(m[1]) : -1;
}

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace testsupport
