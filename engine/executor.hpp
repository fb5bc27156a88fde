// One node's part of a run: rank 0 schedules and broadcasts each step, every
// node walks the op list of its shard, calling its backend and the
// collectives. The same code runs on SimRuntime and on real runtimes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/catalog.hpp"
#include "engine/metered_runtime.hpp"
#include "engine/planner.hpp"
#include "engine/profile.hpp"
#include "engine/scenario.hpp"
#include "engine/scheduler.hpp"

namespace engine {

struct StepTrace {
  double start_s = 0, end_s = 0;
  double compute_s = 0, comm_s = 0;
  int tokens = 0;
  std::vector<std::uint64_t> bytes_to;   // sent during the step, by destination rank
};

struct NodeResult {
  double wait_s = 0;   // of comm_s: blocked in recv while the peer had not sent yet
  double compute_s = 0;
  TrafficStats traffic;
  std::vector<StepTrace> steps;
  std::string error;   // set when the node's main loop ended on a failure
};

struct RunResult {
  std::vector<NodeResult> nodes;
  std::vector<RequestRecord> requests;  // from rank 0's scheduler
  std::vector<StepRecord> steps;
  double end_s = 0;
};

// Called on rank 0 after each request ends: (requests done, total, simulated seconds).
using ProgressFn = std::function<void(int, int, double)>;

struct EngineSetup {
  const Scenario& scenario;
  const Catalog& catalog;
  const Plan& plan;
  const BackendProfile& profile;
  std::vector<Request> requests;
  ProgressFn progress;
};

// Runs node `rt.rank()` to the end of the workload; fills out.nodes[rank]
// (and, on rank 0, the requests and steps). REQUIRES: out.nodes sized to world.
void run_node(Runtime& rt, const EngineSetup& setup, RunResult& out);

}  // namespace engine
