#include "hw/doctor/host_facts.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>


namespace hw::doctor {

std::string RdmaPort::ipv4_gid() const {
  for (const auto& g : gids) {
    in6_addr a{};
    if (::inet_pton(AF_INET6, g.c_str(), &a) != 1) continue;
    static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::equal(kMapped, kMapped + 12, a.s6_addr)) {
      char text[INET_ADDRSTRLEN];
      return ::inet_ntop(AF_INET, a.s6_addr + 12, text, sizeof text);
    }
  }
  return "";
}

const NetPort* HostFacts::port_with(const std::string& ipv4) const {
  for (const auto& p : ports)
    for (const auto& a : p.ipv4)
      if (a.address == ipv4) return &p;
  return nullptr;
}

const RdmaPort* HostFacts::rdma_device(const std::string& name) const {
  for (const auto& r : rdma)
    if (r.device == name) return &r;
  return nullptr;
}

nlohmann::json to_json(const HostFacts& f) {
  nlohmann::json ports = nlohmann::json::array(), rdma = nlohmann::json::array(), tb = nlohmann::json::array();
  for (const auto& p : f.ports) {
    nlohmann::json ipv4 = nlohmann::json::array();
    for (const auto& a : p.ipv4) ipv4.push_back({{"address", a.address}, {"prefix", a.prefix}});
    ports.push_back({{"name", p.name},
                     {"up", p.up},
                     {"carrier", p.carrier},
                     {"ipv4", ipv4},
                     {"bridge", p.bridge},
                     {"hardware", p.hardware}});
  }
  for (const auto& r : f.rdma)
    rdma.push_back(
        {{"device", r.device}, {"port", r.port}, {"active", r.active}, {"active_mtu", r.active_mtu}, {"gids", r.gids}});
  for (const auto& t : f.thunderbolt)
    tb.push_back({{"receptacle", t.receptacle}, {"connected", t.connected}, {"speed_gbps", t.speed_gbps}});
  return {{"version", f.version}, {"system", f.system}, {"ports", ports},
          {"rdma", rdma},         {"thunderbolt", tb},  {"free_memory_bytes", f.free_memory_bytes},
          {"notes", f.notes}};
}

HostFacts facts_from_json(const nlohmann::json& j) {
  try {
    HostFacts f;
    f.version = j.at("version").get<std::string>();
    f.system = j.value("system", "");  // a host on an older meshinfer has none: its version finding says why
    for (const auto& p : j.at("ports")) {
      NetPort port{p.at("name"), p.at("up"), p.at("carrier"), {}, p.at("bridge"), p.at("hardware")};
      for (const auto& a : p.at("ipv4")) port.ipv4.push_back({a.at("address"), a.at("prefix")});
      f.ports.push_back(port);
    }
    for (const auto& r : j.at("rdma"))
      f.rdma.push_back({r.at("device"), r.at("port"), r.at("active"), r.at("active_mtu"), r.at("gids")});
    for (const auto& t : j.at("thunderbolt"))
      f.thunderbolt.push_back({t.at("receptacle"), t.at("connected"), t.at("speed_gbps")});
    f.free_memory_bytes = j.at("free_memory_bytes").get<double>();
    f.notes = j.at("notes").get<std::vector<std::string>>();
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("not the facts `meshinfer doctor --facts` prints: ") + e.what());
  }
}

}  // namespace hw::doctor
