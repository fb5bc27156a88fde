#include "cli/load_for_run.hpp"

#include <fmt/format.h>

#include "sim/scenario_run.hpp"

namespace cli {

session::RunSession load_for_run(const std::string& scenario_file, const std::vector<std::string>& card_files,
                                 std::optional<unsigned long long> seed, bool print_plan,
                                 std::optional<engine::SimulationLevel> level, const WorkloadFlags& workload) {
  session::RunSession l = session::open_session(scenario_file, card_files, seed, level);
  workload.apply(l.scenario.workload);
  const sim::PlanChoice choice = sim::choose_plan(l.scenario, l.catalog, l.profile);
  l.plan = choice.plan;
  if (print_plan) {
    for (const auto& c : choice.candidates)
      fmt::print("  auto: {:<14} {}\n", engine::to_string(c.strategy),
                 c.refusal.empty() ? fmt::format("trial {:.3f} s", c.trial_s) : c.refusal);
    fmt::print("{}", l.plan.describe());
  }
  return l;
}

}  // namespace cli
