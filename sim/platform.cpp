#include "sim/platform.hpp"

namespace sim {

std::optional<Wire> PlatformSpec::wire_between(int a, int b) const {
  for (const Wire& w : wires)
    if ((w.a == a && w.b == b) || (w.a == b && w.b == a)) return w;
  return std::nullopt;
}

PlatformSpec platform_from_scenario(const engine::Scenario& s, const engine::Catalog& catalog) {
  PlatformSpec p;
  for (const auto& node : s.nodes) p.hosts.push_back(node.name);
  for (const auto& c : s.fabric.cables) p.wires.push_back({c.a, c.b, catalog.link(c.link)});
  if (s.fabric.secondary_link) p.secondary = catalog.link(*s.fabric.secondary_link);
  return p;
}

PlatformSpec full_mesh(int nodes, const engine::LinkCard& card) {
  PlatformSpec p;
  for (int i = 0; i < nodes; ++i) p.hosts.push_back("node" + std::to_string(i));
  for (int a = 0; a < nodes; ++a)
    for (int b = a + 1; b < nodes; ++b) p.wires.push_back({a, b, card});
  return p;
}

std::string secondary_host(const std::string& node) { return node + "~secondary"; }

}  // namespace sim
