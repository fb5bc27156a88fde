// Gathering this machine's facts (host_facts.hpp) from the tools its OS has,
// which doctor runs on each host (`meshinfer doctor --facts`, over ssh).
#pragma once

#include <string>

#include "hw/doctor/host_facts.hpp"

namespace hw::doctor {

// This machine's facts: `ip -j -d addr` where iproute2 is, else ifconfig and
// networksetup (macOS); ibv_devinfo -v and system_profiler where present.
HostFacts gather_host_facts(const std::string& version);

}  // namespace hw::doctor
