// trace.json: Chrome trace events of a run, which https://ui.perfetto.dev opens.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/input/scenario.hpp"
#include "engine/node/run_result.hpp"
#include "engine/plan/planner.hpp"

namespace engine {

// Processes: "nodes" (one thread per rank, a "step" span per StepTrace),
// "links" (one thread per cable, one "traffic (whole run)" span: only
// per-node totals exist), "requests" (an async span per request from arrival
// to finish, and an instant at its first token), "faults and recovery" (an
// instant per event, a span per recovery phase).
nlohmann::json render_trace(const Scenario& s, const Plan& plan, const RunResult& r);

}  // namespace engine
