#include <cstdlib>
#include <sstream>

#include "hw/doctor/parsers.hpp"

namespace hw::doctor {

namespace {

// The text after "key:" and its tabs.
std::string value_of(const std::string& body, std::size_t key_end) {
  const auto start = body.find_first_not_of(" \t", key_end + 1);
  return start == std::string::npos ? "" : body.substr(start);
}

}  // namespace

// The format of rdma-core's ibv_devinfo -v (libibverbs/examples/devinfo.c):
// "hca_id:\tNAME", then per port "port:\tN", "state:\t\tPORT_ACTIVE (4)",
// "active_mtu:\t\t4096 (5)" and "GID[  i]:\t\tGID[, RoCE v2]".
std::vector<RdmaPort> parse_ibv_devinfo(const std::string& text) {
  std::vector<RdmaPort> out;
  std::string device;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos) continue;
    const std::string body = line.substr(start);
    const auto colon = body.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = body.substr(0, colon), value = value_of(body, colon);
    if (key == "hca_id") {
      device = value;
    } else if (key == "port" && !device.empty()) {
      RdmaPort port;
      port.device = device;
      port.port = std::atoi(value.c_str());
      out.push_back(port);
    } else if (out.empty() || out.back().device != device) {
      continue;  // device-wide fields
    } else if (key == "state") {
      out.back().active = value.starts_with("PORT_ACTIVE");
    } else if (key == "active_mtu") {
      out.back().active_mtu = std::atoi(value.c_str());
    } else if (key.starts_with("GID[")) {
      out.back().gids.push_back(value.substr(0, value.find(',')));
    }
  }
  return out;
}

}  // namespace hw::doctor
