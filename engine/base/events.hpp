// Something that happened during a run, with its time and cause: a fault the
// world injected, or what the engine did about it (detected, recovered, ...).
#pragma once

#include <cstdint>
#include <string>

namespace engine {

struct RunEvent {
  double t_s = 0;
  std::string kind;    // e.g. "node-crash", "detected", "recovered", "instance-failed"
  std::string target;  // node or link it concerns; empty for the whole fabric
  std::string detail;  // the cause or effect, for a person
};

// What one node took from one sender on the engine's channel, for the oracle
// (oracle.hpp) to check that no message stood in for a lost one. A sender
// numbers its messages from 0 on each path they take (its cable, a detour, the
// secondary network), and a receiver takes one only after all before it on
// its path; a number skipped is a lost message, which fails the sender there,
// as a gap in a frame sequence does on the real transports.
struct Sequence {
  int from = -1, to = -1;      // ranks
  std::uint64_t taken = 0;     // messages `to` took from `from`
  std::uint64_t numbered = 0;  // summed over paths: one past the highest number taken
  double gap_s = -1;           // when `to` first found a number skipped (-1: never)
};

}  // namespace engine
