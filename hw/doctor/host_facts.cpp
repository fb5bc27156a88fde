#include "hw/doctor/host_facts.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "hw/doctor/parsers.hpp"
#include "hw/os.hpp"
#include "hw/shell.hpp"

namespace hw::doctor {

namespace {

// What `command` printed on stdout, or nullopt when it could not run or failed.
std::optional<std::string> output_of(const std::string& command) {
  const ShellResult r = run_shell(command + " 2>/dev/null");
  return r.exit_code == 0 ? std::optional(r.output) : std::nullopt;
}

bool have(const std::string& tool) { return output_of("command -v " + tool).has_value(); }

// The first line `command` printed, or "" when it could not run or failed.
std::string first_line_of(const std::string& command) {
  const auto said = output_of(command);
  return said ? said->substr(0, said->find('\n')) : "";
}

// `uname -srm`, then what macOS adds: its version and the chip (an M3 Ultra's card is not an M4 Max's).
std::string system_line() {
  std::string line = first_line_of("uname -srm");
  if (const std::string v = first_line_of("sw_vers -productVersion"); !v.empty()) line += "; macOS " + v;
  if (const std::string chip = first_line_of("sysctl -n machdep.cpu.brand_string"); !chip.empty()) line += "; " + chip;
  return line;
}

}  // namespace

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

HostFacts gather_host_facts(const std::string& version) {
  HostFacts f;
  f.version = version;
  f.system = system_line();
  if (const auto ip = output_of("ip -j -d addr show")) {
    f.ports = parse_ip_addr_json(*ip);
  } else if (const auto ifc = output_of("ifconfig -a")) {
    f.ports = parse_ifconfig(*ifc);
    if (const auto hw_ports = output_of("networksetup -listallhardwareports")) apply_hardware_ports(*hw_ports, f.ports);
  } else {
    f.notes.push_back("neither `ip` (iproute2) nor `ifconfig` runs here: no network ports listed");
  }
  if (const auto tb = output_of("system_profiler SPThunderboltDataType")) f.thunderbolt = parse_thunderbolt(*tb);
  if (have("ibv_devinfo")) {
    if (const auto dev = output_of("ibv_devinfo -v")) f.rdma = parse_ibv_devinfo(*dev);
  } else {
    f.notes.push_back("ibv_devinfo is not installed (rdma-core's ibverbs-utils): no RDMA devices listed");
  }
  f.free_memory_bytes = static_cast<double>(free_memory_bytes());
  return f;
}

}  // namespace hw::doctor
