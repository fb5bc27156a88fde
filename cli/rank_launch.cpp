#include "cli/rank_launch.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "hw/faults/netns_faults.hpp"
#include "hw/os.hpp"

namespace cli {

std::vector<std::string> node_argv(int r, const std::string& cluster, const std::string& scenario,
                                   const std::string& out, const std::vector<std::string>& cards,
                                   engine::Strategy strategy) {
  // The rank program beside this one links no simulator; a tree without it runs `meshinfer node`.
  const std::filesystem::path self = hw::self_executable();
  const std::filesystem::path rank = self.parent_path() / "meshinfer-node";
  std::vector<std::string> node = std::filesystem::exists(rank) ? std::vector<std::string>{rank.string()}
                                                                 : std::vector<std::string>{self.string(), "node"};
  node.insert(node.end(), {"--rank", std::to_string(r), "--cluster", cluster, scenario, "--out", out, "--parallelism",
                           engine::to_string(strategy)});
  for (const auto& card : cards) node.insert(node.end(), {"--card", card});
  return node;
}

hw::LaunchHooks faults_on_rank0_clock(const std::string& log, ApplyDue apply) {
  auto zero = std::make_shared<double>(-1);  // rank 0's run clock zero, in unix seconds
  hw::LaunchHooks hooks;
  hooks.on_line = [zero](int rank, const std::string& line) {
    if (const auto t = hw::run_clock_zero(line); rank == 0 && *zero < 0 && t) *zero = *t;
  };
  hooks.on_tick = [zero, log, apply = std::move(apply)](const std::vector<pid_t>& pids) {
    if (*zero < 0) return;
    apply(hw::unix_now_s() - *zero, pids, [&](const engine::RunEvent& e) {
      hw::append_event(log, hw::unix_now_s(), e);
      fmt::print(stderr, "launch: applying {} {} at {:.3f} s ({})\n", e.kind, e.target, e.t_s, e.detail);
    });
  };
  return hooks;
}

}  // namespace cli
