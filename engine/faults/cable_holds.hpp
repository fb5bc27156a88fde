// When a cable that faults hold down carries traffic again, one rule for every
// world (sim/fault_injector, hw/faults/netns_faults): only when the last fault
// holding it ends (a link-down, a flap's down phase), at once when it is
// replugged (a link-up releases every hold), and, for an RDMA cable, never
// after the RDMA stack failed (only a restart of every node brings it back:
// docs/reference-facts.md#thunderbolt-instability).
#pragma once

#include <map>
#include <string>

namespace engine {

class CableHolds {
 public:
  enum class Change { kHold, kRelease, kReplug };
  // Applies `c` to `cable` (any name that is one cable, or one NIC on a
  // switched network) and returns whether it carries traffic afterwards.
  // `rdma`: a point-to-point RDMA cable, which the stack failure keeps off.
  bool change(const std::string& cable, Change c, bool rdma);
  // Every RDMA cable off for good; the caller turns them off.
  void fail_rdma_stack() { rdma_failed_ = true; }

 private:
  std::map<std::string, int> holds_;  // per cable: faults holding it down
  bool rdma_failed_ = false;
};

}  // namespace engine
