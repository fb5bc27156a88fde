// An outside judge of a run under faults. It knows only the scenario, its
// fault schedule (fault_timeline.hpp) and the report the run wrote; it
// includes nothing of the executor or recovery, so it cannot share their
// mistakes. From the schedule it derives what must happen, per policy:
//   - a request fails only for a cause the schedule justifies (fail-stop: any
//     outage; replan: the coordinator lost, survivors that cannot hold the
//     model, or a client out of tries; reroute: a node lost or a cable no
//     third live node can bridge; fallback: a node lost);
//   - nothing is detected before any node or cable was silent past the
//     heartbeat timeout or lost a message (no false suspicion), and, while the instance serves
//     under its coordinator, a detection names a node an outage silenced or
//     an end of a silenced cable (no wrong suspect);
//   - a node silenced well past the timeout is detected within the bound the
//     heartbeat settings imply, while the instance serves: the first such
//     outage, and each later one that strikes an instance recovered from all
//     before it;
//   - every completed request has each of its tokens exactly once;
//   - no message was taken in place of a lost one (the report's sequences),
//     and a loss a receiver found has a cable outage to explain it; detection
//     may act on that outage from then on, however short it was.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/input/scenario.hpp"

namespace engine {

// One line per violation. `report`: the run's report.json (report.hpp).
// REQUIRES: `s` is the scenario the run ran, faults included; `catalog` has its cards.
std::vector<std::string> judge_run(const Scenario& s, const Catalog& catalog, const nlohmann::ordered_json& report);

}  // namespace engine
