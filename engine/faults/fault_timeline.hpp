// What a fault schedule does to the world, derived from the scenario alone:
// which nodes and cables go silent, from when, for how long. The oracle
// (oracle.hpp) judges runs by it, so it shares nothing with the engine's
// detection or recovery code.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/input/scenario.hpp"

namespace engine {

inline constexpr double kForever = std::numeric_limits<double>::infinity();

// One node or cable silenced by the schedule.
struct Outage {
  enum Kind { kNode, kCable, kAnyNodes };  // kAnyNodes: some nodes, which ones the schedule does not say
  Kind kind = kNode;
  int node = -1;  // kNode: the node; kCable: one end
  int peer = -1;  // kCable: the other end
  double start_s = 0;
  double silence_s = 0;             // longest continuous silence it causes (kForever: never ends)
  bool ends_instance_role = false;  // kNode: the machine's engine is gone for good (crash, restart)
  std::string cause;                // the fault, for a person
};

// How long a silence detection may and must notice, from the heartbeat settings:
// a peer is last heard up to one beat before it falls silent.
struct DetectionBounds {
  double heartbeat_s = 0, timeout_s = 0;
  // Shorter silences leave no peer silent past the timeout: nothing to detect.
  double may_detect_above() const { return timeout_s - heartbeat_s; }
  // Longer ones must be noticed, within must_detect_within() of their start.
  double must_detect_above() const { return timeout_s + 2 * heartbeat_s; }
  double must_detect_within() const { return timeout_s + 3 * heartbeat_s; }
};

// Every outage `s.faults` causes, in start order. Faults that silence nothing
// (degrade, slow, a link-up) cause none.
std::vector<Outage> outages(const Scenario& s, const Catalog& catalog);

}  // namespace engine
