#include "engine/faults/fault_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "engine/faults/tcp_instability.hpp"

namespace engine {

namespace {

using Op = FaultAction::Op;
using Change = CableHolds::Change;

// The actions of fault `i` of `s`, in time order.
std::vector<FaultAction> actions_of(const Scenario& s, int i, const std::vector<double>& boot_s) {
  const FaultSpec& f = s.faults[i];
  std::vector<FaultAction> out;
  const auto add = [&](double at, Op op, const std::string& kind, const std::string& detail) -> FaultAction& {
    return out.emplace_back(FaultAction{at, op, i, f.node, f.peer, Change::kHold, 1, 0,
                                        RunEvent{0, kind, kind.empty() ? "" : f.target, detail}});
  };
  const auto cable = [&](double at, Change change, const std::string& kind, const std::string& detail) {
    add(at, Op::kCable, kind, detail).change = change;
  };
  const auto restart = [&](int node, const std::string& cause) {
    const std::string& name = s.nodes.at(node).name;
    out.push_back({f.at_s, Op::kPowerOff, i, node, -1, Change::kHold, 1, 0,
                   RunEvent{0, to_string(FaultKind::kNodeCrash), name, cause}});
    out.push_back({f.at_s + boot_s.at(node), Op::kBoot, i, node, -1, Change::kHold, 1, 0,
                   RunEvent{0, "node-up", name, "booted; its engine process is not running until the cluster re-admits it"}});
  };
  const std::string kind = to_string(f.kind);
  const double until = f.at_s + f.duration_s;
  switch (f.kind) {
    case FaultKind::kLinkDown:
      cable(f.at_s, Change::kHold, kind, "cable unplugged");
      if (f.duration_s > 0) cable(until, Change::kRelease, to_string(FaultKind::kLinkUp), "cable back");
      break;
    case FaultKind::kLinkUp:
      cable(f.at_s, Change::kReplug, kind, "cable back");
      break;
    case FaultKind::kLinkDegrade: {
      FaultAction& a = add(f.at_s, Op::kDegrade, kind,
                           fmt::format("bandwidth x{}, latency +{} s", f.factor, f.added_latency_s));
      a.factor = f.factor;
      a.added_latency_s = f.added_latency_s;
      if (f.duration_s > 0) add(until, Op::kDegrade, "link-restored", "full bandwidth and latency");
      break;
    }
    case FaultKind::kLinkFlap: {
      add(f.at_s, Op::kNote, kind, fmt::format("down {:.0f}% of every {} s", 100 * f.duty, f.period_s));
      // Whole cycles only, each down for its duty, until the fault's end (or the run's deadline).
      const double end = f.duration_s > 0 ? until : s.deadline_s;
      for (double t = f.at_s; t + f.period_s <= end;) {
        cable(t, Change::kHold, "", "");
        t += f.duty * f.period_s;
        cable(t, Change::kRelease, "", "");
        t += (1 - f.duty) * f.period_s;
      }
      break;
    }
    case FaultKind::kNodeCrash:
      add(f.at_s, Op::kPowerOff, kind, "power lost");
      break;
    case FaultKind::kNodeRestart:
      restart(f.node, "restarted");
      break;
    case FaultKind::kTcpInstability:
      for (const int node : tcp_instability_reboots(s, f)) restart(node, kTcpPanic);
      break;
    case FaultKind::kNodeHang:
      add(f.at_s, Op::kHang, kind, "alive but silent");
      if (f.duration_s > 0) add(until, Op::kResume, "node-resumed", "answers again");
      break;
    case FaultKind::kNodeSlow:
      add(f.at_s, Op::kThrottle, kind, fmt::format("compute at x{} speed (thermal throttling)", f.factor)).factor =
          f.factor;
      if (f.duration_s > 0) add(until, Op::kThrottle, "node-speed-restored", "full speed");
      break;
    case FaultKind::kRdmaStackFailure:
      // macOS 26.2: every RDMA link on every node is unusable until all nodes restart.
      add(f.at_s, Op::kRdmaStackFailure, kind,
          f.ip_survives ? "every RDMA queue pair unusable until the whole cluster restarts; IP over the cables goes on"
                        : "every RDMA cable unusable until the whole cluster restarts")
          .ip_survives = f.ip_survives;
      break;
    case FaultKind::kRdmaPacketLoss:
      break;  // no action on cables or nodes: softrdma drops the packets (hw/faults/packet_loss)
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.at_s < b.at_s; });
  return out;
}

}  // namespace

std::vector<std::vector<FaultAction>> fault_actions(const Scenario& s, const std::vector<double>& boot_s) {
  std::vector<std::vector<FaultAction>> out;
  for (int i = 0; i < static_cast<int>(s.faults.size()); ++i) out.push_back(actions_of(s, i, boot_s));
  return out;
}

std::vector<FaultAction> timed_actions(const Scenario& s, const std::vector<double>& boot_s) {
  std::vector<FaultAction> all;
  for (auto& actions : fault_actions(s, boot_s)) all.insert(all.end(), actions.begin(), actions.end());
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.at_s < b.at_s; });
  return all;
}

}  // namespace engine
