#include "engine/input/scenario.hpp"

namespace engine {

int Scenario::node_index(const std::string& name) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == name) return int(i);
  }
  return -1;
}

nlohmann::ordered_json fault_json(const FaultSpec& f) {
  nlohmann::ordered_json j{{"at_s", f.at_s}, {"kind", f.kind}};
  if (!f.target.empty()) j["target"] = f.target;
  if (f.duration_s > 0) j["duration_s"] = f.duration_s;
  if (f.kind == FaultKind::kLinkDegrade || f.kind == FaultKind::kNodeSlow) j["factor"] = f.factor;
  if (f.added_latency_s > 0) j["added_latency_s"] = f.added_latency_s;
  if (f.kind == FaultKind::kLinkFlap) {
    j["period_s"] = f.period_s;
    j["duty"] = f.duty;
  }
  if (f.loss > 0) j["loss"] = f.loss;
  if (f.reorder > 0) j["reorder"] = f.reorder;
  if (f.ip_survives) j["ip_survives"] = true;
  return j;
}

}  // namespace engine
