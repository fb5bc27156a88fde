#include "engine/faults/fault_timeline.hpp"

#include <algorithm>

namespace engine {

namespace {

bool same_cable(const FaultSpec& f, int a, int b) {
  return (f.node == a && f.peer == b) || (f.node == b && f.peer == a);
}

// A link-down lasts its duration, or until a later link-up of the same cable.
double down_for(const Scenario& s, const FaultSpec& f) {
  double end = f.duration_s > 0 ? f.at_s + f.duration_s : kForever;
  for (const FaultSpec& g : s.faults)
    if (g.kind == FaultKind::kLinkUp && g.at_s >= f.at_s && same_cable(g, f.node, f.peer)) end = std::min(end, g.at_s);
  return end - f.at_s;
}

}  // namespace

std::vector<Outage> outages(const Scenario& s, const Catalog& catalog) {
  std::vector<Outage> out;
  for (const FaultSpec& f : s.faults) {
    const std::string what = to_string(f.kind) + (f.target.empty() ? "" : " " + f.target);
    if (f.kind == FaultKind::kNodeCrash || f.kind == FaultKind::kNodeRestart) {
      // A restarted machine boots, but its engine is not re-admitted: gone for the instance.
      out.push_back({Outage::kNode, f.node, -1, f.at_s, kForever, true, what});
    } else if (f.kind == FaultKind::kNodeHang) {
      out.push_back({Outage::kNode, f.node, -1, f.at_s, f.duration_s > 0 ? f.duration_s : kForever, false, what});
    } else if (f.kind == FaultKind::kTcpInstability) {
      out.push_back({Outage::kAnyNodes, -1, -1, f.at_s, kForever, true, what});
    } else if (f.kind == FaultKind::kLinkDown) {
      out.push_back({Outage::kCable, f.node, f.peer, f.at_s, down_for(s, f), false, what});
    } else if (f.kind == FaultKind::kLinkFlap) {
      out.push_back({Outage::kCable, f.node, f.peer, f.at_s, f.duty * f.period_s, false, what});
    } else if (f.kind == FaultKind::kRdmaStackFailure) {
      // Every point-to-point cable's RDMA, for good; a switched network is untouched. Where IP
      // survives it the cables still carry heartbeats, but the engine's next message over each
      // fails at once: an outage detection may act on from its start, as on a silent cable.
      for (const Cable& c : s.fabric.cables)
        if (!catalog.link(c.link).switched) out.push_back({Outage::kCable, c.a, c.b, f.at_s, kForever, false, what});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Outage& a, const Outage& b) { return a.start_s < b.start_s; });
  // Overlapping silences of one node or cable are one longer silence (flaps excepted: theirs is periodic).
  std::vector<Outage> merged;
  for (const Outage& o : out) {
    auto same = std::find_if(merged.begin(), merged.end(), [&](const Outage& m) {
      return m.kind == o.kind && m.kind != Outage::kAnyNodes && !m.cause.starts_with("link-flap") &&
             !o.cause.starts_with("link-flap") && std::min(m.node, m.peer) == std::min(o.node, o.peer) &&
             std::max(m.node, m.peer) == std::max(o.node, o.peer) && o.start_s <= m.start_s + m.silence_s;
    });
    if (same == merged.end()) {
      merged.push_back(o);
      continue;
    }
    same->silence_s = std::max(same->silence_s, o.start_s + o.silence_s - same->start_s);
    same->ends_instance_role = same->ends_instance_role || o.ends_instance_role;
    same->cause += ", " + o.cause;
  }
  return merged;
}

}  // namespace engine
