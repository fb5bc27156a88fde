#include <sstream>
#include <string_view>

#include "engine/base/portable_math.hpp"
#include "hw/doctor/parsers.hpp"

namespace hw::doctor {

namespace {

std::size_t indent(const std::string& line) { return line.find_first_not_of(' '); }

// The number after `key` in "Key: ... N ..." (0 when there is none).
double number_after(const std::string& line, const std::string& key) {
  const auto at = line.find(key);
  if (at == std::string::npos) return 0;
  const auto digit = line.find_first_of("0123456789", at + key.size());
  if (digit == std::string::npos) return 0;
  const auto end = line.find_first_not_of("0123456789.", digit);
  return engine::portable::parse_decimal(std::string_view(line).substr(digit, end - digit)).value_or(0);
}

}  // namespace

// The format of `system_profiler SPThunderboltDataType` on Apple Silicon: under each
// "Thunderbolt/USB4 Bus N:", a "Port:" block with "Status: Device connected" or
// "No device connected", "Speed: Up to 80 Gb/s" and "Receptacle: N".
std::vector<ThunderboltLink> parse_thunderbolt(const std::string& text) {
  std::vector<ThunderboltLink> out;
  std::istringstream in(text);
  std::size_t port_indent = std::string::npos;  // npos: not inside a Port block
  ThunderboltLink link;
  auto finish = [&] {
    if (port_indent != std::string::npos && link.receptacle > 0) out.push_back(link);
    port_indent = std::string::npos;
    link = {};
  };
  for (std::string line; std::getline(in, line);) {
    const std::size_t at = indent(line);
    if (at == std::string::npos) continue;
    const std::string body = line.substr(at);
    if (port_indent != std::string::npos && at <= port_indent) finish();
    if (body == "Port:") {
      port_indent = at;
      continue;
    }
    if (port_indent == std::string::npos) continue;
    if (body.starts_with("Status:")) link.connected = body == "Status: Device connected";
    if (body.starts_with("Speed:")) link.speed_gbps = number_after(body, "Speed:");
    if (body.starts_with("Receptacle:")) link.receptacle = static_cast<int>(number_after(body, "Receptacle:"));
  }
  finish();
  return out;
}

}  // namespace hw::doctor
