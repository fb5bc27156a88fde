// `meshinfer launch SCENARIO --netns`: the scenario's cluster as network
// namespaces on this machine, one rank in each, its faults applied to the real
// processes and veths at their times (hw/faults/netns_faults.hpp).
#pragma once

#include <string>
#include <vector>

namespace cli {

struct NetnsLaunch {
  std::string scenario, out;
  std::vector<std::string> cards;
  double timeout_s = 600;
  double max_rate_bps = 0;  // the most a shaped cable may carry here; 0: the default
  bool rdma = false;        // over the rdma transport: softrdma's device on each veth (rdma_v<peer>)
};

// Builds the mesh, probes it into a card named as the scenario's link (so the
// simulated twin runs on what was measured), runs the ranks with the faults,
// tears the mesh down. Returns rank 0's status. Throws InputError when the
// scenario asks for what real processes cannot do.
int launch_netns(const NetnsLaunch& o);

}  // namespace cli
