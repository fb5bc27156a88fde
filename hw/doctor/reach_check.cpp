#include <fmt/format.h>

#include <set>

#include "hw/doctor/checks.hpp"

namespace hw::doctor {

std::string ClusterFacts::name(int r) const {
  std::set<std::string> names;
  for (const auto& h : cluster.hosts) names.insert(h.ssh);
  return names.size() == cluster.hosts.size() ? cluster.hosts.at(r).ssh : fmt::format("rank {}", r);
}

std::vector<Finding> check_reach(const ClusterFacts& f, const std::string& version) {
  std::vector<Finding> out;
  for (int r = 0; r < f.cluster.world(); ++r) {
    const std::string host = f.name(r);
    if (!f.hosts[r]) {
      out.push_back({"reach", host, false, f.unreachable[r],
                     fmt::format("check that `ssh {} meshinfer --version` works without a password prompt "
                                 "(BatchMode) and that meshinfer is at the same path there",
                                 f.cluster.hosts[r].ssh)});
    } else if (f.hosts[r]->version != version) {
      out.push_back({"version", host, false, fmt::format("runs `{}`; this one is `{}`", f.hosts[r]->version, version),
                     "install the same meshinfer build on every host"});
    } else {
      out.push_back({"version", host, true, "reachable, same meshinfer", ""});
    }
  }
  return out;
}

}  // namespace hw::doctor
