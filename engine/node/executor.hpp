// The step loop of one node within one epoch: rank 0 schedules and broadcasts
// each step, every node walks the op list of its shard, calling its backend
// and the collectives. What happens across epochs, when a member fails, is
// recovery.hpp's. The same code runs on SimRuntime and on real runtimes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/cards/stack_profile.hpp"
#include "engine/input/scenario.hpp"
#include "engine/node/backend.hpp"
#include "engine/node/run_result.hpp"
#include "engine/node/scheduler.hpp"
#include "engine/plan/planner.hpp"

namespace engine {

// Called on rank 0 after each request ends: (requests done, total, simulated seconds).
using ProgressFn = std::function<void(int, int, double)>;

struct EngineSetup {
  const Scenario& scenario;
  const Catalog& catalog;
  const Plan& plan;
  const StackProfile& profile;
  std::vector<Request> requests;
  ProgressFn progress;
  BackendFactory backend;  // empty: modelled; a backend that computes also makes the run carry token ids
  // Told of each recovery event as this node records it (a real run prints them live); may be empty.
  std::function<void(const RunEvent&)> on_event{};
};

// Within a step, a member that heartbeats but sends nothing for this long has
// lost our messages (a flapping cable drops them silently, as UC RDMA does).
inline constexpr double kStepProgressTimeoutS = 30;

// Runs steps of `plan` on `rt`, this epoch's EpochRuntime (logical ranks index
// plan.shards), until rank 0 broadcasts the end of the workload. Rank 0 passes
// its scheduler, the others nullptr. Adds to `result`; a failure leaves as
// PeerFailure, Timeout or Reconfigure, for the recovery control plane.
void run_epoch(Runtime& rt, const EngineSetup& setup, const Plan& plan, const LinkCard& link, NodeResult& result,
               Scheduler* scheduler);

// After every node ended: the requests and steps from the scheduler, any
// request still open failed with its cause.
void finish_run(RunResult& out, double end_s);

}  // namespace engine
