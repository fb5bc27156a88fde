// The simulator's decode-speed prediction against real processes on a shaped
// netns mesh, given the link card `meshinfer probe` measured on that mesh.
// Prints predicted, measured and their ratio for each run, then the median.
// Needs root (network namespaces). Usage: netns_predict_bench [runs, default 5]
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"
#include "support/netns_mesh.hpp"
#include "support/real_run.hpp"

namespace {

using nlohmann::json;

constexpr int kWorld = 4;
constexpr const char* kShaping = "rate 200mbit burst 16kb latency 100ms";

double decode_speed(const std::string& report) {
  return json::parse(testsupport::read_file(report))["summary"]["decode_tokens_per_s"].get<double>();
}

void must(const testsupport::CliResult& r, const std::string& what) {
  if (r.exit_code != 0) throw std::runtime_error(what + " failed:\n" + r.output);
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  if (const std::string why = testsupport::NetnsMesh::unavailable_reason(); !why.empty()) {
    fmt::print(stderr, "netns_predict_bench: {}\n", why);
    return 1;
  }
  fmt::print("Decode speed, {} ranks in network namespaces over veth shaped by tbf ({}),\n", kWorld, kShaping);
  fmt::print("batch 8 of 16 tokens, tb5 link card replaced by the one probed on this mesh\n\n");
  fmt::print("| run | probed Gbit/s | probed latency us | predicted tok/s | measured tok/s | predicted/measured |\n");
  fmt::print("|---|---|---|---|---|---|\n");
  std::vector<double> ratios;
  for (int run = 1; run <= runs; ++run) {
    testsupport::NetnsMesh mesh(kWorld, kShaping);
    const std::string dir = testsupport::fresh_dir("netns-predict-" + std::to_string(run));
    const std::string cluster = testsupport::write_json(dir, "cluster", mesh.cluster(5000));
    const std::string prefix = " --exec-prefix '" + mesh.exec_prefix() + "'";
    const std::string card = dir + "/veth-probed.json";
    must(testsupport::run_cli("probe --cluster " + cluster + prefix + " --out " + card +
                              " --pings 30 --bytes 1000000 --repeats 2 --timeout 60"),
         "probe");
    const json probed = json::parse(testsupport::read_file(card));

    // A batch of 8 decodes: all-reduces of 48 KB, so the link's rate, not its
    // 16 KB burst nor the CPU, sets the pace.
    json s = testsupport::small_scenario("netns-predict", kWorld, 8, 16, "fail-stop", "veth-probed");
    s["workload"]["prompt_tokens"] = 4;
    s["workload"]["arrival"] = {{"type", "closed"}, {"concurrency", 8}};
    const std::string scenario = testsupport::write_json(dir, "s", s);
    must(testsupport::run_cli("launch " + scenario + " --hostfile " + cluster + prefix + " --out " + dir +
                              "/real --timeout 60 --card " + card),
         "launch");
    must(testsupport::run_cli("run --quiet " + scenario + " --card " + card + " --out " + dir + "/sim"), "run");
    const double measured = decode_speed(dir + "/real/report.json"), predicted = decode_speed(dir + "/sim/report.json");
    ratios.push_back(predicted / measured);
    fmt::print("| {} | {:.3f} | {:.0f} | {:.1f} | {:.1f} | {:.3f} |\n", run, probed["bandwidth_gbps"].get<double>(),
               probed["latency_us"].get<double>(), predicted, measured, ratios.back());
  }
  std::sort(ratios.begin(), ratios.end());
  fmt::print("\nmedian predicted/measured {:.3f} (min {:.3f}, max {:.3f}) over {} runs\n", ratios[ratios.size() / 2],
             ratios.front(), ratios.back(), ratios.size());
  return 0;
}
