// The checks of `meshinfer doctor`, one file each. Every check judges the
// facts gathered from all hosts and returns findings: passed, or what is wrong
// where (host, port or cable) and how to fix it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/plan/planner.hpp"
#include "hw/cluster.hpp"
#include "hw/doctor/host_facts.hpp"
#include "hw/link_probe.hpp"

namespace hw::doctor {

struct Finding {
  std::string check;    // reach, version, address, cabling, bridge, rdma, link-speed, probe, memory
  std::string subject;  // a host, "host:port", or a cable "a:port <-> b:port"
  bool ok = true;
  std::string what;  // what was found
  std::string fix;   // what to do about it ("" when ok)
};

// Every host's facts, by rank; nullopt with the reason when a host did not answer.
struct ClusterFacts {
  const ClusterSpec& cluster;
  std::vector<std::optional<HostFacts>> hosts;
  std::vector<std::string> unreachable;  // by rank: why its facts are missing ("" when present)

  // How findings name rank r: its ssh host, or "rank R" where hosts share a name.
  std::string name(int r) const;
};

// Each host answered, and runs the same meshinfer as `version` (this one's).
std::vector<Finding> check_reach(const ClusterFacts& f, const std::string& version);
// The cluster file's addresses are on the hosts; every pair has exactly one
// cable (two ports sharing a subnet) and it is up; no bridge joins mesh ports.
std::vector<Finding> check_cabling(const ClusterFacts& f);
// For "transport": "rdma": each device of the matrix present, ACTIVE, with an
// IPv4-mapped GID, and the same active MTU at both ends of each pair.
std::vector<Finding> check_rdma(const ClusterFacts& f);
// Thunderbolt receptacles linked slower than the fastest in the cluster (macOS).
std::vector<Finding> check_link_speed(const ClusterFacts& f);
// Each probed pair against the others (and against `card_gbps` when given):
// a pair at under half the median bandwidth, or over twice the median latency (and 100 us
// more), is an outlier.
std::vector<Finding> check_probe(const ClusterFacts& f, const std::vector<PairFigures>& pairs,
                                 std::optional<double> card_gbps);
// Each host's free memory against the weights of the shard `plan` gives its rank.
std::vector<Finding> check_memory(const ClusterFacts& f, const engine::Plan& plan);

}  // namespace hw::doctor
