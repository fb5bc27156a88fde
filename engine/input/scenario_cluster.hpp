// Reading a scenario's `cluster` (scenario.cpp reads the rest of the file).
#pragma once

#include <string>
#include <vector>

#include "engine/base/json_input.hpp"
#include "engine/cards/catalog.hpp"
#include "engine/input/scenario.hpp"

namespace engine {

// Fills s.nodes and s.fabric (cables generated for a full mesh) from
// root's "cluster", refusing unknown hardware or links, bad or reused ports,
// and a fabric that leaves a node unreached.
void read_cluster(JsonObject& root, Scenario& s, const Catalog& catalog);

// s.nodes' names, in order: the "known" list of an unknown node name.
std::vector<std::string> node_names(const Scenario& s);

}  // namespace engine
