#include <fmt/format.h>

#include <algorithm>

#include "hw/doctor/checks.hpp"

namespace hw::doctor {

std::vector<Finding> check_link_speed(const ClusterFacts& f) {
  double fastest = 0;
  for (const auto& h : f.hosts)
    if (h)
      for (const auto& t : h->thunderbolt)
        if (t.connected) fastest = std::max(fastest, t.speed_gbps);
  std::vector<Finding> out;
  for (int r = 0; r < f.cluster.world(); ++r) {
    if (!f.hosts[r]) continue;
    for (const auto& t : f.hosts[r]->thunderbolt) {
      if (!t.connected) continue;
      const std::string subject = fmt::format("{}:receptacle {}", f.name(r), t.receptacle);
      if (t.speed_gbps < fastest)
        out.push_back({"link-speed", subject, false,
                       fmt::format("links at up to {:g} Gb/s where the fastest in the cluster links at {:g} Gb/s",
                                   t.speed_gbps, fastest),
                       "replace the cable with one of the mesh's kind (a Thunderbolt 4 cable caps a Thunderbolt 5 "
                       "port at 40 Gb/s)"});
      else
        out.push_back({"link-speed", subject, true, fmt::format("up to {:g} Gb/s", t.speed_gbps), ""});
    }
  }
  return out;
}

}  // namespace hw::doctor
