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

}  // namespace hw
