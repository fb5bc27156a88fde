#include <bit>
#include <charconv>
#include <cstdint>
#include <map>
#include <sstream>

#include "hw/doctor/parsers.hpp"

namespace hw::doctor {

namespace {

bool has_flag(const std::string& line, const std::string& flag) {
  const auto open = line.find('<'), close = line.find('>');
  if (open == std::string::npos || close == std::string::npos) return false;
  std::istringstream flags(line.substr(open + 1, close - open - 1));
  for (std::string f; std::getline(flags, f, ',');)
    if (f == flag) return true;
  return false;
}

}  // namespace

// The format of Apple's ifconfig (network_cmds: ifconfig.c prints "name: flags=...<...> mtu N",
// af_inet.c "inet A netmask 0xMASK [broadcast B]", ifbridge.c "member: IF flags=...",
// ifmedia.c "status: active|inactive").
std::vector<NetPort> parse_ifconfig(const std::string& text) {
  std::vector<NetPort> out;
  std::map<std::string, std::string> bridge_of;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line[0] != ' ' && line[0] != '\t') {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      NetPort p;
      p.name = line.substr(0, colon);
      p.up = has_flag(line, "UP");
      p.carrier = has_flag(line, "RUNNING");  // until a status line says otherwise
      if (has_flag(line, "LOOPBACK")) p.hardware = "loopback";
      out.push_back(p);
      continue;
    }
    if (out.empty()) continue;
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "inet") {
      std::string address, netmask_word, mask;
      words >> address >> netmask_word >> mask;
      std::uint32_t bits = 0xffffffffu;  // a point-to-point "A --> B" has no netmask word
      if (netmask_word == "netmask" && mask.starts_with("0x"))
        std::from_chars(mask.data() + 2, mask.data() + mask.size(), bits, 16);
      out.back().ipv4.push_back({address, std::popcount(bits)});
    } else if (key == "status:") {
      std::string status;
      words >> status;
      out.back().carrier = status == "active";
    } else if (key == "member:") {
      std::string member;
      words >> member;
      bridge_of[member] = out.back().name;
    }
  }
  for (auto& p : out)
    if (const auto b = bridge_of.find(p.name); b != bridge_of.end()) p.bridge = b->second;
  return out;
}

// The format of `networksetup -listallhardwareports` (macOS): blocks of
// "Hardware Port: NAME", "Device: enN", "Ethernet Address: ..." separated by blank lines.
void apply_hardware_ports(const std::string& text, std::vector<NetPort>& ports) {
  std::istringstream in(text);
  std::string hardware;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("Hardware Port: ")) hardware = line.substr(15);
    if (!line.starts_with("Device: ")) continue;
    const std::string device = line.substr(8);
    for (auto& p : ports)
      if (p.name == device) p.hardware = hardware;
  }
}

}  // namespace hw::doctor
