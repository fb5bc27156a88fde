// A run below the command line, simulated or real: the scenario loaded with
// its cards and stack profile, the plan it runs on, and the finished run turned
// into report files, a summary and an exit status. Links no SimGrid: the
// simulator chooses an "auto" plan (sim::choose_plan), a real rank is told it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/cards/stack_profile.hpp"
#include "engine/input/scenario.hpp"
#include "engine/node/run_result.hpp"
#include "engine/plan/planner.hpp"
#include "session/exit_status.hpp"

namespace session {

struct RunSession {
  engine::Catalog catalog;  // the builtin one plus the user's card files and the scenario's model directory
  engine::Scenario scenario;
  engine::StackProfile profile;
  engine::Plan plan;  // empty until chosen
  // The scaling view the reports carry as bottleneck.scaling (sim/studies/scaling.hpp); null: none.
  nlohmann::ordered_json scaling;
};

// Loads `scenario_file` against the builtin catalog and `card_files`; `seed`
// and `level` override the scenario's. Throws InputError.
RunSession open_session(const std::string& scenario_file, const std::vector<std::string>& card_files,
                        std::optional<unsigned long long> seed, std::optional<engine::SimulationLevel> level);

// The plan of a scenario that names its parallelism, or of `chosen` (what the
// simulator chose for "auto" and handed on). Throws InputError when neither
// says or they disagree, PlanError when the plan cannot work.
engine::Plan plan_for(const RunSession& s, std::optional<engine::Strategy> chosen);

// Writes the reports of `l.plan` into `out_dir` (default reports/out/<scenario name>),
// prints the summary; returns 0, or kExitBreach when an expectation or an
// invariant failed. `transport`: empty for a simulated run; for a real one,
// what it ran over (the reports name it, and say its seconds are elapsed
// time), and then requests that failed where the scenario's expectations do
// not say how many may are a breach too, and the last line printed is the
// run's one-line outcome (kOutcomePrefix). `junit_file`: also the
// expectations and invariants as JUnit XML there (empty: none).
int report_run(const RunSession& l, const engine::RunResult& result, const std::string& out_dir,
               const std::string& transport, const std::string& junit_file = "");

}  // namespace session
