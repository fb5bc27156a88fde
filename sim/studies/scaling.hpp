// What each added node buys: a model, its hardware, link, stack and plan on
// 1, 2, 4, ... nodes, each node count simulated on one request at the flow
// level (in a child process), with its decode token split into the seven
// terms of engine/report/bottleneck.hpp and the term that stops it scaling.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/cards/catalog.hpp"
#include "engine/input/scenario.hpp"
#include "sim/studies/worker_pool.hpp"

namespace sim {

// `s` on its first 1, 2, 4, ... nodes and on all of them, with the cables
// among those nodes, `strategy`'s plan, no faults, and one request (its
// workload's first prompt, 16 output tokens). As report.json's
// "bottleneck.scaling": {workload, strategy, points: [{nodes, hardware, status
// ("simulated" or "dropped"), reason, decode_tokens_per_s, speedup (over the
// previous simulated count), decode (the terms of the node that sets the
// pace), limit: {term, name, excess_s}, then: the same}]}. limit is the term
// that grew most past perfect scaling (its time at the previous count x
// previous / this count): what the added nodes could not divide; then the
// next, when it grew past it too. Deterministic whatever `jobs`.
nlohmann::ordered_json scaling_view(const engine::Scenario& s, engine::Strategy strategy,
                                    const engine::Catalog& catalog, int jobs);

}  // namespace sim
