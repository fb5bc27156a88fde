#include <nlohmann/json.hpp>
#include <stdexcept>

#include "hw/doctor/parsers.hpp"

namespace hw::doctor {

// Fields as iproute2 prints them (ip/ipaddress.c, print_linkinfo and print_addrinfo).
std::vector<NetPort> parse_ip_addr_json(const std::string& text) {
  const auto all = nlohmann::json::parse(text, nullptr, false);
  if (!all.is_array()) throw std::runtime_error("`ip -j addr` did not print a JSON array");
  std::vector<NetPort> out;
  for (const auto& link : all) {
    NetPort p;
    p.name = link.value("ifname", "");
    for (const auto& flag : link.value("flags", nlohmann::json::array())) {
      p.up |= flag == "UP";
      p.carrier |= flag == "LOWER_UP";
    }
    p.bridge = link.value("master", "");
    // The port's kind: veth, bridge, ...; Linux's thunderbolt-net names its ports thunderbolt0, ...
    if (link.contains("linkinfo")) p.hardware = link["linkinfo"].value("info_kind", "");
    if (p.name.starts_with("thunderbolt")) p.hardware = "Thunderbolt (thunderbolt-net)";
    if (link.value("link_type", "") == "loopback") p.hardware = "loopback";
    for (const auto& a : link.value("addr_info", nlohmann::json::array()))
      if (a.value("family", "") == "inet") p.ipv4.push_back({a.value("local", ""), a.value("prefixlen", 32)});
    out.push_back(p);
  }
  return out;
}

}  // namespace hw::doctor
