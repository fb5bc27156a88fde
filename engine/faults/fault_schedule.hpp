// A scenario's faults as timed actions on cables and nodes: the one
// translation that both worlds carry out, the simulator on its platform
// (sim/fault_injector) and a real run on its network namespaces
// (hw/faults/netns_faults). The oracle judges by fault_timeline.hpp, which derives
// what the faults silence from the scenario alone and shares nothing with this.
#pragma once

#include <vector>

#include "engine/base/events.hpp"
#include "engine/faults/cable_holds.hpp"
#include "engine/input/scenario.hpp"

namespace engine {

struct FaultAction {
  enum class Op {
    kNote,              // only the event: a fault whose actions follow, or none do
    kCable,             // node-peer's cable held down, released or replugged (CableHolds rules)
    kDegrade,           // node-peer's cable at `factor` of its bandwidth, `added_latency_s` more latency
    kPowerOff,          // node loses power: its process and every cable of its machine go dark
    kBoot,              // node has power again and has booted; no instance re-admits it
    kHang,              // node alive but silent, until its last hang ends
    kResume,            // one hang of node ends
    kThrottle,          // node computes at `factor` of its speed
    kRdmaStackFailure,  // every RDMA queue pair of the cluster unusable until all restart
  };
  double at_s = 0;
  Op op = Op::kNote;
  int fault = 0;  // index into the scenario's faults
  int node = -1, peer = -1;
  CableHolds::Change change = CableHolds::Change::kHold;  // kCable
  double factor = 1;                                      // kDegrade, kThrottle: the fraction kept (1: restored)
  double added_latency_s = 0;                             // kDegrade
  RunEvent event{};          // what the world notes when it is done (t_s is its time); kind empty: nothing
  bool ip_survives = false;  // kRdmaStackFailure: IP over the cables goes on; false: the cables go dark
};

// Each fault's actions in time order, faults in the scenario's order, so a
// world that runs each fault on a timeline of its own keeps their overlaps.
// `boot_s` by node: how long a restarted node takes to boot.
// REQUIRES: boot_s has an entry per node when `s` restarts any (node-restart, tcp-instability).
std::vector<std::vector<FaultAction>> fault_actions(const Scenario& s, const std::vector<double>& boot_s);

// The same in one list by time (stable: in a fault's order, then the scenario's).
std::vector<FaultAction> timed_actions(const Scenario& s, const std::vector<double>& boot_s);

}  // namespace engine
