// The nodes a tcp-instability fault reboots (TCP over Thunderbolt crashed and
// rebooted two Macs under load: docs/reference-facts.md#thunderbolt-instability), drawn from the scenario's seed
// and the fault's time, so the simulator and the netns launcher reboot the same.
#pragma once

#include <vector>

#include "engine/input/scenario.hpp"

namespace engine {

// What both worlds note as the reboots' cause.
inline constexpr const char* kTcpPanic = "kernel panic in the Thunderbolt TCP stack";

// Two distinct nodes of `s` (every node when it has fewer), in the order drawn.
// REQUIRES: f.kind == FaultKind::kTcpInstability.
std::vector<int> tcp_instability_reboots(const Scenario& s, const FaultSpec& f);

}  // namespace engine
