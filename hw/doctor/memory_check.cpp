#include <fmt/format.h>

#include "hw/doctor/checks.hpp"

namespace hw::doctor {

std::vector<Finding> check_memory(const ClusterFacts& f, const engine::Plan& plan) {
  std::vector<Finding> out;
  for (const auto& shard : plan.shards) {
    if (shard.node >= f.cluster.world() || !f.hosts[shard.node]) continue;
    const double free = f.hosts[shard.node]->free_memory_bytes, need = shard.weight_bytes;
    const std::string host = f.name(shard.node);
    const std::string what =
        fmt::format("{:.1f} GB free; its shard ({}, layers {}-{}) needs {:.1f} GB of weights", free / 1e9,
                    shard.node_name, shard.first_layer, shard.end_layer - 1, need / 1e9);
    if (free < need)
      out.push_back({"memory", host, false, what,
                     "free memory on this host (quit other programs) or plan for more nodes (meshinfer plan)"});
    else
      out.push_back({"memory", host, true, what, ""});
  }
  return out;
}

}  // namespace hw::doctor
