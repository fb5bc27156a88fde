#include "engine/faults/tcp_instability.hpp"

#include <algorithm>
#include <random>
#include <utility>

namespace engine {

std::vector<int> tcp_instability_reboots(const Scenario& s, const FaultSpec& f) {
  std::mt19937_64 rng(s.seed ^ static_cast<unsigned long long>(f.at_s * 1e6));
  std::vector<int> nodes(s.nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i] = static_cast<int>(i);
  // Fisher-Yates on the raw engine: std::shuffle differs between standard libraries.
  for (std::size_t i = nodes.size(); i > 1; --i) std::swap(nodes[i - 1], nodes[rng() % i]);
  nodes.resize(std::min<std::size_t>(2, nodes.size()));
  return nodes;
}

}  // namespace engine
