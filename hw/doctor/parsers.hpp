// Readers of what each OS prints about its network ports and RDMA devices, one
// file each. They take the text as printed and never run anything, so they are
// tested against recorded outputs (tests/hw/doctor/fixtures). Lines they do not
// know are skipped: the tools add fields between releases.
#pragma once

#include <string>
#include <vector>

#include "hw/doctor/host_facts.hpp"

namespace hw::doctor {

// Linux: `ip -j -d addr show` (iproute2's JSON). Throws std::runtime_error on bad JSON.
std::vector<NetPort> parse_ip_addr_json(const std::string& text);

// macOS: `ifconfig -a` (flags, inet with a hex netmask, status, bridge members).
std::vector<NetPort> parse_ifconfig(const std::string& text);
// macOS: `networksetup -listallhardwareports`; sets each listed port's `hardware`.
void apply_hardware_ports(const std::string& text, std::vector<NetPort>& ports);
// macOS: `system_profiler SPThunderboltDataType`, one entry per receptacle.
std::vector<ThunderboltLink> parse_thunderbolt(const std::string& text);

// rdma-core's `ibv_devinfo -v` (Linux, and the same tool over Apple's librdma).
std::vector<RdmaPort> parse_ibv_devinfo(const std::string& text);

}  // namespace hw::doctor
