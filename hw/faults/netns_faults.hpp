// The netns mesh's actuator of a scenario's fault actions
// (engine/faults/fault_schedule.hpp), carried out on a real run at their times
// on the run's clock: a cable's veths down and up (link-down, link-up, link-flap),
// its tbf rate scaled (link-degrade; its added latency is the ranks' own, see
// engine::DelayedRuntime), a rank's process killed (node-crash), stopped and
// continued (node-hang), held to a CPU quota (node-slow, hw::CpuQuota), or
// killed and, once booted, started again (node-restart, and the two nodes a
// tcp-instability reboots; the instance does not re-admit them, as in
// simulation: its bootstrap is over); every cable down for good (an
// rdma-stack-failure that IP does not survive; one it survives is softrdma's
// switch, hw/faults/stack_failure.hpp). A killed rank's cables are down until it
// boots, as a machine without power sends nothing. A cable comes back only when
// the last fault holding it down ends (engine::CableHolds, the simulator's
// rule). Each applied fault is an event as the simulator notes it, at the real
// time it was applied.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/events.hpp"
#include "engine/faults/cable_holds.hpp"
#include "engine/faults/fault_schedule.hpp"
#include "engine/input/scenario.hpp"
#include "hw/cpu_quota.hpp"
#include "hw/faults/cable_switch.hpp"

namespace hw {

struct Refusal {
  std::string json_path, reason;
};
// Why `s` cannot run on a netns mesh as written (nothing when it can): a fault
// or recovery policy real processes do not carry out yet, where and why.
std::optional<Refusal> netns_refusal(const engine::Scenario& s);

// The launcher's log of applied faults, one JSON event a line with the unix
// time it was applied (e.t_s is not written), which the reporting rank reads
// into its report. Each rank's run clock has its own zero (ranks leave the
// barrier milliseconds apart), so the reader places each event on its own
// clock, `zero_unix` being its run clock's zero; one logged before it is at 0.
void append_event(const std::string& path, double unix_s, const engine::RunEvent& e);
std::vector<engine::RunEvent> read_events(const std::string& path, double zero_unix);
// The unix time of a rank's run clock zero, from the line `meshinfer node`
// prints when it joins ("... run clock zero at unix T"); none on other lines.
std::optional<double> run_clock_zero(const std::string& line);
// Now, in unix seconds: the fault log's clock.
double unix_now_s();

class NetnsFaults {
 public:
  // REQUIRES: !netns_refusal(s); `rate_bps` the rate every cable is shaped to;
  // `cables` (a NetnsMesh) outlives this; `boot_s` by rank, how long a
  // restarted node takes to boot (its hardware card's), when `s` restarts one.
  NetnsFaults(const engine::Scenario& s, CableSwitch& cables, double rate_bps, std::vector<double> boot_s = {});

  // Applies every action due by `t_s` on the run's clock to the ranks' processes
  // (`pids` by rank, -1 for one that ended). `note` gets each action's event
  // before it is carried out, so a rank that sees the fault's effect finds it logged.
  void apply_due(double t_s, const std::vector<pid_t>& pids, const std::function<void(const engine::RunEvent&)>& note);
  // The ranks booted since the last call, to be started again (LaunchHooks::restart).
  std::vector<int> take_restarts();
  // Once every other rank has ended, kills the ranks that cannot end on their
  // own: one started again after a restart (no instance admits it), and, when
  // no action is left, one a hang without end stopped (as a node that never
  // answers again is, to the rest, a dead one).
  void end_left_out(const std::vector<pid_t>& pids);

 private:
  using Change = engine::CableHolds::Change;
  // What the action's event says of this world where it differs from the simulator's words.
  engine::RunEvent event_here(const engine::FaultAction& a) const;
  void change_cable(int a, int b, Change c);
  // Every cable of `rank`, and its secondary port, held down while it has no power, released when it has.
  void set_power(int rank, bool on);

  CableSwitch& cables_;
  engine::CableHolds holds_;
  double rate_bps_;
  double cpu_share_;  // CPUs per rank on this machine: what a node-slow's factor scales
  std::vector<engine::FaultAction> actions_;  // by time (engine/faults/fault_schedule.hpp)
  std::size_t next_ = 0;
  std::vector<int> hangs_;                           // by rank: hangs in progress
  std::vector<bool> restarted_, powered_off_;        // by rank
  std::vector<int> restarts_;                        // booted, not started yet
  std::map<int, std::unique_ptr<CpuQuota>> quotas_;  // by rank, made at its first node-slow
};

}  // namespace hw
