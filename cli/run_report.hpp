// What `run` (simulated) and `node` (real processes) share: loading a
// scenario with its plan, and turning a finished run into the report files,
// a summary line and an exit status.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/workload_flags.hpp"
#include "engine/cards/catalog.hpp"
#include "engine/cards/stack_card.hpp"
#include "engine/input/scenario.hpp"
#include "engine/node/run_result.hpp"
#include "engine/plan/planner.hpp"

namespace cli {

struct LoadedScenario {
  engine::Catalog catalog;  // the builtin one plus the user's card files
  engine::Scenario scenario;
  engine::StackCard profile;
  engine::Plan plan;
};

// Throws InputError / PlanError. `seed`, `level` and `workload` override the
// scenario's; `print_plan`: the plan (and auto's candidates) on stdout.
LoadedScenario load_for_run(const std::string& scenario_file, const std::vector<std::string>& card_files,
                            std::optional<unsigned long long> seed, bool print_plan,
                            std::optional<engine::SimulationLevel> level = std::nullopt,
                            const WorkloadFlags& workload = {});

// Writes the reports into `out_dir` (default reports/out/<scenario name>),
// prints the summary; returns 0, or kExitBreach when an expectation or an
// invariant failed. `transport`: empty for a simulated run; for a real one,
// what it ran over (the reports name it, and say its seconds are elapsed
// time), and then requests that failed where the scenario's expectations do
// not say how many may are a breach too, and the last line printed is the
// run's one-line outcome (hw::kOutcomePrefix). `junit_file`: also the
// expectations and invariants as JUnit XML there (empty: none).
int report_run(const LoadedScenario& l, const engine::RunResult& result, const std::string& out_dir,
               const std::string& transport, const std::string& junit_file = "");

}  // namespace cli
