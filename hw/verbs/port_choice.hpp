// The port and GID a queue pair uses on a device, chosen as Apple's rules ask
// (docs/reference-facts.md#macos-rdma-over-thunderbolt): the first ACTIVE port (not always 1) and its IPv4-mapped GID,
// published only once the interface has an IPv4 address.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <stdexcept>

#include "hw/verbs/verbs_api.hpp"

namespace hw {

struct PortChoice {
  std::uint8_t port = 0;
  int gid_index = -1;
  std::array<std::uint8_t, 16> gid{};
  ibv_mtu active_mtu = IBV_MTU_1024;
  std::uint16_t lid = 0;
  std::uint32_t max_msg_sz = 0;
};

// Throws std::runtime_error saying why there is none: "device is down: no
// ACTIVE port (port 1 DOWN)" or "port 2 has no IPv4-mapped GID yet: ...".
PortChoice choose_port(VerbsApi& api, ibv_context* context);

}  // namespace hw
