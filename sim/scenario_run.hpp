// Simulates a scenario: the engine's node loop on every simulated host.
#pragma once

#include <string>
#include <vector>

#include "engine/cards/stack_profile.hpp"
#include "engine/input/scenario.hpp"
#include "engine/input/workload.hpp"
#include "engine/node/executor.hpp"
#include "engine/plan/planner.hpp"

namespace sim {

// Runs the workload on the plan. REQUIRES: no other Simulation in this process.
// Throws InputError for a fault the simulator does not model (refuse_unsimulated).
engine::RunResult simulate(const engine::Scenario& s, const engine::Catalog& catalog, const engine::Plan& plan,
                           const engine::StackProfile& profile, std::vector<engine::Request> requests,
                           const engine::ProgressFn& progress = {});

struct PlanCandidate {
  engine::Strategy strategy;
  std::string refusal;  // why it cannot work; empty when valid
  double trial_s = 0;   // simulated time of the trial workload
};

struct PlanChoice {
  engine::Plan plan;
  std::vector<PlanCandidate> candidates;  // for "auto": every strategy tried
};

// The scenario's parallelism, or for "auto" the valid strategy whose short
// trial simulation (a slice of the workload, each in a child process) ends
// first. Throws engine::PlanError when nothing can work, with every reason.
PlanChoice choose_plan(const engine::Scenario& s, const engine::Catalog& catalog, const engine::StackProfile& profile);

}  // namespace sim
