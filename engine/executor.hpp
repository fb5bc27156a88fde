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

#include "engine/backend.hpp"
#include "engine/catalog.hpp"
#include "engine/events.hpp"
#include "engine/metered_runtime.hpp"
#include "engine/planner.hpp"
#include "engine/scenario.hpp"
#include "engine/scheduler.hpp"
#include "engine/stack_card.hpp"

namespace engine {

struct StepTrace {
  double start_s = 0, end_s = 0;
  double compute_s = 0, comm_s = 0;
  int tokens = 0;
  std::vector<std::uint64_t> bytes_to;   // sent during the step, as TrafficStats counts them
  double wait_s = 0;                     // of comm_s: blocked in recv while the peer had not sent yet
  std::vector<std::uint64_t> relayed{};  // as TrafficStats::relayed; empty when no byte took a detour
};

struct NodeResult {
  double compute_s = 0;
  TrafficStats traffic;
  std::vector<StepTrace> steps;
  std::string error;  // set when the node's main loop ended on a failure
};

struct RunResult {
  std::vector<NodeResult> nodes;
  std::vector<RequestRecord> requests;  // from rank 0's scheduler, by finish_run()
  std::vector<StepRecord> steps;
  std::vector<RunEvent> events;  // faults injected and what the engine did
  // What each node took of each other's numbered messages; empty where the runtime numbers none.
  std::vector<Sequence> sequences;
  long tokens_recomputed = 0;  // KV rebuilt after re-placements
  // Each re-placement on the survivors: when, and the plan from then on.
  std::vector<std::pair<double, Plan>> placements;
  double end_s = 0;
  // Rank 0's scheduler, kept here so its records outlive a coordinator that died.
  std::shared_ptr<Scheduler> scheduler;
};

// Called on rank 0 after each request ends: (requests done, total, simulated seconds).
using ProgressFn = std::function<void(int, int, double)>;

// Builds the backend of shard `rt.rank()` of `plan`; `modelled` is the one a
// node uses without a factory (its roofline time, for a backend to charge).
using BackendFactory =
    std::function<std::unique_ptr<Backend>(Runtime& rt, const Plan& plan, std::unique_ptr<Backend> modelled)>;

struct EngineSetup {
  const Scenario& scenario;
  const Catalog& catalog;
  const Plan& plan;
  const StackCard& profile;
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
