// A scenario opened for `run` or a launch, with its plan chosen once: the
// scenario's parallelism, or for "auto" the one the simulator's trials pick
// (a launch hands it to its ranks, which link no simulator).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/workload_flags.hpp"
#include "session/run_session.hpp"

namespace cli {

// Throws InputError / PlanError. `seed`, `level` and `workload` override the
// scenario's; `print_plan`: the plan (and auto's candidates) on stdout.
session::RunSession load_for_run(const std::string& scenario_file, const std::vector<std::string>& card_files,
                                 std::optional<unsigned long long> seed, bool print_plan,
                                 std::optional<engine::SimulationLevel> level = std::nullopt,
                                 const WorkloadFlags& workload = {});

}  // namespace cli
