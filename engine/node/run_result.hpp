// What a run leaves behind: per node its traffic and step trace, rank 0's
// records of every request and step, the events and re-placements. Reports,
// checks and the real ranks' result codec read it; the executor writes it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/events.hpp"
#include "engine/node/metered_runtime.hpp"
#include "engine/node/scheduler.hpp"
#include "engine/plan/planner.hpp"

namespace engine {

struct StepTrace {
  double start_s = 0, end_s = 0;
  double compute_s = 0, comm_s = 0;
  int tokens = 0;
  std::vector<std::uint64_t> bytes_to;   // sent during the step, as TrafficStats counts them
  double wait_s = 0;                     // of comm_s: blocked in recv while the peer had not sent yet
  std::vector<std::uint64_t> relayed{};  // as TrafficStats::relayed; empty when no byte took a detour
  // What the report splits the step's time by (report/bottleneck.hpp):
  int prefill_tokens = 0;     // of tokens, those of prompts
  OpTime modelled{};          // the cost model's terms of compute_s (zero: a backend that measures)
  std::uint64_t messages = 0;  // sent during the step
  double message_s = 0;        // one message's latency and per-message overheads on the epoch's link
  double link_bandwidth = 0;   // the epoch's link, bytes/s
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

}  // namespace engine
