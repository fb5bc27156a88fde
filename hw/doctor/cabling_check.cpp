#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "hw/doctor/checks.hpp"

namespace hw::doctor {

namespace {

std::uint32_t ipv4_bits(const std::string& a) {
  in_addr x{};
  return ::inet_pton(AF_INET, a.c_str(), &x) == 1 ? ntohl(x.s_addr) : 0;
}

std::string subnet_text(const Ipv4& a) {
  const std::uint32_t mask = a.prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - a.prefix);
  const std::uint32_t net = ipv4_bits(a.address) & mask;
  return fmt::format("{}.{}.{}.{}/{}", net >> 24, (net >> 16) & 255, (net >> 8) & 255, net & 255, a.prefix);
}

bool listed(const ClusterSpec& c, int r, const std::string& address) {
  const auto& ips = c.hosts[r].ips;
  return std::find(ips.begin(), ips.end(), address) != ips.end();
}

bool holds_listed(const ClusterSpec& c, int r, const NetPort& p) {
  return std::any_of(p.ipv4.begin(), p.ipv4.end(), [&](const Ipv4& a) { return listed(c, r, a.address); });
}

// A port of the mesh: a Thunderbolt port, one holding an address the cluster file
// lists, or one of the same kind (veth, ...) as such a port on its host.
bool mesh_port(const ClusterFacts& f, int r, const NetPort& p) {
  if (p.hardware == "loopback") return false;
  if (p.is_thunderbolt() || holds_listed(f.cluster, r, p)) return true;
  const auto& ports = f.hosts[r]->ports;
  return !p.hardware.empty() && std::any_of(ports.begin(), ports.end(), [&](const NetPort& q) {
    return q.hardware == p.hardware && holds_listed(f.cluster, r, q);
  });
}

struct End {
  int host;
  const NetPort* port;
};

std::string end_name(const ClusterFacts& f, const End& e) { return f.name(e.host) + ":" + e.port->name; }

std::string why_down(const ClusterFacts& f, const End& e) {
  if (!e.port->up) return end_name(f, e) + " is configured down";
  if (!e.port->carrier) return end_name(f, e) + " has no carrier";
  return "";
}

void check_addresses(const ClusterFacts& f, int r, std::vector<Finding>& out) {
  const HostFacts& h = *f.hosts[r];
  std::string unaddressed;  // a cabled port without IPv4: where the missing address likely belongs
  for (const auto& p : h.ports) {
    if (!mesh_port(f, r, p) || !p.up || !p.carrier || !p.ipv4.empty() || !p.bridge.empty()) continue;
    unaddressed = p.name;
    out.push_back({"address", f.name(r) + ":" + p.name, false,
                   "is cabled (carrier) but has no IPv4 address: it is in no cable's subnet, and an RDMA device on "
                   "it publishes no IPv4-mapped GID",
                   fmt::format("give it the address of its cable's subnet (macOS: sudo ifconfig {0} inet A.B.C.D/30; "
                               "Linux: sudo ip addr add A.B.C.D/30 dev {0})",
                               p.name)});
  }
  for (const auto& a : f.cluster.hosts[r].ips) {
    if (h.port_with(a)) continue;
    const std::string port = unaddressed.empty() ? "PORT" : unaddressed;
    out.push_back({"address", f.name(r), false,
                   fmt::format("the cluster file gives it {}, but no port of {} has that address", a, f.name(r)),
                   fmt::format("add it to the port of that cable (macOS: sudo ifconfig {0} inet {1}/30; Linux: "
                               "sudo ip addr add {1}/30 dev {0}), or correct {2}",
                               port, a, f.cluster.file)});
  }
}

void check_bridges(const ClusterFacts& f, int r, std::vector<Finding>& out) {
  const HostFacts& h = *f.hosts[r];
  for (const auto& p : h.ports) {
    if (p.bridge.empty()) continue;
    const NetPort* bridge = nullptr;
    for (const auto& b : h.ports)
      if (b.name == p.bridge) bridge = &b;
    const bool bridges_mesh = p.is_thunderbolt() || (bridge && mesh_port(f, r, *bridge));
    if (!bridges_mesh) continue;
    out.push_back({"bridge", f.name(r) + ":" + p.name, false,
                   fmt::format("is a member of {}{}: the bridge joins the mesh's ports into one network, so "
                               "traffic loops and each cable loses its own subnet",
                               p.bridge, bridge && !bridge->hardware.empty() ? " (" + bridge->hardware + ")" : ""),
                   fmt::format("take it out of the bridge (macOS: System Settings > Network > Thunderbolt Bridge > "
                               "Inactive, or sudo ifconfig {} deletem {}; Linux: sudo ip link set {} nomaster)",
                               p.bridge, p.name, p.name)});
  }
}

}  // namespace

std::vector<Finding> check_cabling(const ClusterFacts& f) {
  std::vector<Finding> out;
  const int n = f.cluster.world();
  // Every subnet on a mesh port, with the ports on it.
  std::map<std::string, std::vector<End>> subnets;
  for (int r = 0; r < n; ++r) {
    if (!f.hosts[r]) continue;
    check_addresses(f, r, out);
    check_bridges(f, r, out);
    for (const auto& p : f.hosts[r]->ports)
      if (mesh_port(f, r, p))
        for (const auto& a : p.ipv4) subnets[subnet_text(a)].push_back({r, &p});
  }
  std::map<std::pair<int, int>, std::vector<std::pair<End, End>>> cables;
  for (const auto& [subnet, ends] : subnets) {
    std::set<int> hosts;
    for (const auto& e : ends) hosts.insert(e.host);
    if (hosts.size() == 2 && ends.size() == 2) {
      const auto& [a, b] = ends[0].host < ends[1].host ? std::pair{ends[0], ends[1]} : std::pair{ends[1], ends[0]};
      cables[{a.host, b.host}].push_back({a, b});
    } else if (ends.size() > 2) {
      std::string who;
      for (const auto& e : ends) who += (who.empty() ? "" : ", ") + end_name(f, e);
      out.push_back(
          {"cabling", subnet, false,
           fmt::format("joins {} ports ({}): a cable joins two; a bridge or a switch is in the way", ends.size(), who),
           "give each cable its own small subnet (a /30) and remove the bridge"});
    }
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (!f.hosts[a] || !f.hosts[b]) continue;
      const std::string pair = f.name(a) + " - " + f.name(b);
      const auto& found = cables[{a, b}];
      if (found.empty()) {
        out.push_back({"cabling", pair, false,
                       "no cable: no port of one shares a subnet with a port of the other (a full mesh needs one "
                       "cable per pair)",
                       fmt::format("connect {} and {} with their own cable and give both ends addresses in one "
                                   "small subnet (for example 10.0.{}.1/30 and 10.0.{}.2/30)",
                                   f.name(a), f.name(b), a * 16 + b, a * 16 + b)});
        continue;
      }
      if (found.size() > 1) {
        std::string which;
        for (const auto& [x, y] : found)
          which += (which.empty() ? "" : ", ") + end_name(f, x) + " <-> " + end_name(f, y);
        out.push_back({"cabling", pair, false, fmt::format("{} cables between one pair: {}", found.size(), which),
                       "keep one cable per pair and move the others to pairs that have none"});
        continue;
      }
      const auto& [x, y] = found.front();
      const std::string cable = end_name(f, x) + " <-> " + end_name(f, y);
      std::string down = why_down(f, x);
      if (down.empty()) down = why_down(f, y);
      if (!down.empty())
        out.push_back({"cabling", cable, false, "the cable is down: " + down,
                       "seat the cable at both ends and bring both ports up (macOS: sudo ifconfig PORT up; Linux: "
                       "sudo ip link set PORT up)"});
      else
        out.push_back({"cabling", cable, true, "one cable, both ends up", ""});
    }
  }
  return out;
}

}  // namespace hw::doctor
