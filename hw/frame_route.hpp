// Where a message goes on a detour (the `reroute` policy), as both transports'
// frame headers carry it: a frame to forward names its destination, a
// forwarded one its origin, in one rank field beside two flags.
#pragma once

#include <algorithm>
#include <cstdint>

namespace hw {

// At most one of the two is set.
struct FrameRoute {
  int forward_to = -1;    // the receiver relays the message to this rank
  int relayed_from = -1;  // the receiver relayed it; this rank sent it

  bool operator==(const FrameRoute&) const = default;
  // The rank field of a header: the rank set, or 0 when neither is.
  std::int32_t hop() const { return forward_to >= 0 ? forward_to : std::max(relayed_from, 0); }
};

}  // namespace hw
