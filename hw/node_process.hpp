// One rank of a real run: the engine's node loop on the cluster's transport,
// the heartbeat loop beside it in a thread over TCP connections of its own
// (so a heartbeat never queues behind a 64 MiB frame), and at the end every
// node's results gathered on the reporting rank: rank 0, or the lowest rank
// still alive when rank 0 is gone.
#pragma once

#include <functional>

#include "engine/node/delayed_runtime.hpp"
#include "engine/node/executor.hpp"
#include "hw/cluster.hpp"
#include "hw/transport.hpp"

namespace hw {

struct NodeOutcome {
  bool reporter = false;
  engine::RunResult result;  // the whole run on the reporter (finish_run done); this node's part elsewhere
};

// Called once every rank has joined, with the wall-clock time (Unix seconds)
// that the run's clock (Runtime::now, report times) counts from. Read just
// after that zero, so a unix time put on the run's clock is never late.
using JoinedFn = std::function<void(double clock_zero_unix_s)>;

// `delays`: latency added to this rank's messages (data and heartbeats), as a
// degraded cable's where the kernel cannot add it (engine::DelayedRuntime).
// REQUIRES: setup.scenario has as many nodes as the cluster has hosts.
NodeOutcome run_node_process(const ClusterSpec& cluster, int rank, const TransportOptions& transport,
                             const engine::EngineSetup& setup, const JoinedFn& joined = {},
                             const std::vector<engine::AddedLatency>& delays = {});

}  // namespace hw
