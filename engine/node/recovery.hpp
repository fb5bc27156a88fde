// The recovery control plane: a node of the instance across epochs. Each epoch
// runs the step loop (executor.hpp) on the members of the time; when one
// fails, the coordinator (rank 0) applies the scenario's recovery policy
// (fail-stop, reroute, replan, fallback), tells the members its decision, and
// the others follow it, fenced by the epoch number.
#pragma once

#include "engine/base/runtime.hpp"
#include "engine/node/executor.hpp"
#include "engine/node/liveness.hpp"

namespace engine {

// Runs node `rt.rank()` to the end of the workload, through failures as the
// scenario's recovery policy says; `m` is fed by the node's heartbeat loop.
// Fills out.nodes[rank]; rank 0 also owns out.scheduler and notes events.
// REQUIRES: out.nodes sized to world.
void run_node(Runtime& rt, Liveness& m, const EngineSetup& setup, RunResult& out);

}  // namespace engine
