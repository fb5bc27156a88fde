// What the simulated mesh is made of: hosts and the cables between them, each
// with its link card. Built from a scenario, or directly by tests and benches.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/input/scenario.hpp"

namespace sim {

struct Wire {
  int a = 0, b = 0;
  engine::LinkCard card;
};

struct PlatformSpec {
  std::vector<std::string> hosts;
  std::vector<Wire> wires;
  // A switched network every node also has (e.g. 10 GbE), used after a fallback.
  std::optional<engine::LinkCard> secondary;

  // The wire joining a and b (either order); nullopt when none does.
  std::optional<Wire> wire_between(int a, int b) const;
};

PlatformSpec platform_from_scenario(const engine::Scenario& s, const engine::Catalog& catalog);
PlatformSpec full_mesh(int nodes, const engine::LinkCard& card);

// The host a node's traffic uses once it moved to the secondary network.
std::string secondary_host(const std::string& node);

}  // namespace sim
