// load_for_run as meshinfer (no simulator) has it, for launch: a scenario
// that names its plan is planned here; for "auto" the simulator's trials
// pick it, so the launch goes on in meshinfer-sim (cli/load_for_run.cpp).
#include <fmt/format.h>

#include "cli/load_for_run.hpp"
#include "cli/simulator_program.hpp"

namespace cli {

session::RunSession load_for_run(const std::string& scenario_file, const std::vector<std::string>& card_files,
                                 std::optional<unsigned long long> seed, bool print_plan,
                                 std::optional<engine::SimulationLevel> level, const WorkloadFlags& workload) {
  session::RunSession l = session::open_session(scenario_file, card_files, seed, level);
  if (!l.scenario.parallelism) become_simulator();
  workload.apply(l.scenario.workload);
  l.plan = session::plan_for(l, std::nullopt);
  if (print_plan) fmt::print("{}", l.plan.describe());
  return l;
}

}  // namespace cli
