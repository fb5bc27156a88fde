// What faults do to a real mesh's cables. NetnsMesh carries it out; a test
// can record it without namespaces.
#pragma once

#include <string>

namespace hw {

class CableSwitch {
 public:
  virtual ~CableSwitch() = default;
  // Both ends of the cable between ranks a and b down or up.
  virtual void set_link_up(int a, int b, bool up) = 0;
  // Both ends of that cable shaped by tc tbf parameters `tbf` (empty: unshaped).
  virtual void shape_link(int a, int b, const std::string& tbf) = 0;
  // Rank r's port on the secondary network down or up; nothing where there is none.
  virtual void set_secondary_port_up(int r, bool up) = 0;
};

// The tbf parameters of a cable of `rate_bps`: a burst of one frame, so a
// message leaves at the rate, not at once up to a bucket's worth. 1514 B: one
// Ethernet frame at the veth's MTU of 1500 (tbf passes no frame larger than
// its burst); a queue of 200 ms before it drops.
inline std::string cable_tbf(double rate_bps) {
  return "rate " + std::to_string(static_cast<long long>(rate_bps)) + "bit burst 1514 latency 200ms";
}

}  // namespace hw
