#include "engine/faults/cable_downtime.hpp"

#include <map>
#include <string>

#include "engine/faults/cable_holds.hpp"
#include "engine/faults/fault_schedule.hpp"

namespace engine {

std::vector<std::vector<Downtime>> cable_downtimes(const Scenario& s, const Catalog& catalog, double end_s) {
  const auto& cables = s.fabric.cables;
  const auto nic = [&](int node) { return "nic-" + s.nodes[node].name; };
  // What a fault on the pair (a, b) holds, as sim/fault_injector: their first cable, or on a switch a's NIC.
  const auto held = [&](int a, int b) {
    for (std::size_t k = 0; k < cables.size(); ++k) {
      const Cable& c = cables[k];
      if ((c.a == a && c.b == b) || (c.a == b && c.b == a))
        return catalog.link(c.link).switched ? nic(a) : "cable-" + std::to_string(k);
    }
    return std::string();
  };
  std::vector<double> boot_s;
  for (const NodeSpec& n : s.nodes) boot_s.push_back(catalog.hardware(n.hardware).boot_s);

  CableHolds holds;
  std::map<std::string, bool> off;  // by what faults hold: carries nothing
  bool rdma_failed = false;         // every point-to-point cable off for good
  std::vector<std::vector<Downtime>> out(cables.size());
  for (const FaultAction& a : timed_actions(s, boot_s)) {
    if (a.at_s > end_s) break;  // the run had ended: never applied
    if (a.op == FaultAction::Op::kCable) {
      const std::string part = held(a.node, a.peer);
      off[part] = !holds.change(part, a.change, part.rfind("cable-", 0) == 0);
    } else if (a.op == FaultAction::Op::kRdmaStackFailure && !a.ip_survives) {  // else IP goes on over them
      holds.fail_rdma_stack();
      rdma_failed = true;
    } else {
      continue;
    }
    for (std::size_t k = 0; k < cables.size(); ++k) {
      const Cable& c = cables[k];
      const bool down = catalog.link(c.link).switched ? off[nic(c.a)] || off[nic(c.b)]
                                                      : off["cable-" + std::to_string(k)] || rdma_failed;
      auto& d = out[k];
      const bool was_down = !d.empty() && d.back().to_s < 0;
      if (down && !was_down) d.push_back({a.at_s, -1});
      if (!down && was_down) d.back().to_s = a.at_s;
    }
  }
  return out;
}

}  // namespace engine
