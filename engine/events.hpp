// Something that happened during a run, with its time and cause: a fault the
// world injected, or what the engine did about it (detected, recovered, ...).
#pragma once

#include <string>

namespace engine {

struct RunEvent {
  double t_s = 0;
  std::string kind;    // e.g. "node-crash", "detected", "recovered", "instance-failed"
  std::string target;  // node or link it concerns; empty for the whole fabric
  std::string detail;  // the cause or effect, for a person
};

}  // namespace engine
