// How long a collective takes at the flow level, computed outside SimGrid from
// the links as they are: each member sends its phase's messages one software
// overhead apart, then waits for what it receives; a message pays its route's
// latency, then shares each link's bandwidth max-min fairly with the messages
// on it at the same time, as SimGrid's network model does.
#pragma once

#include <simgrid/forward.h>

#include <limits>
#include <memory>
#include <vector>

namespace sim {

inline constexpr double kNever = std::numeric_limits<double>::infinity();

using Route = std::vector<simgrid::s4u::Link*>;

// One leg of a message's way: to its destination, or to and from a relay.
struct FlowHop {
  const Route* links = nullptr;  // nullptr when the far end is down: the message vanishes
  double timed_bytes = 0;  // engine::timed_bytes of the message on this leg's card
};

// A message as its sender resolves it when it arrives at the collective.
struct FlowMessage {
  int dst = 0;
  double overhead_s = 0;  // the sender's software cost before it leaves
  FlowHop hops[2];        // the second only through a relay
  int hop_count = 1;
  double relay_overhead_s = 0;  // the relay's own cost between the hops
  int path = 0;                 // the sender's path to dst (SimRuntime): losing it leaves a hole there
};

struct FlowPart {
  double arrived_s = -1;                        // -1: not yet
  std::vector<std::vector<FlowMessage>> sends;  // by phase, in send order
  std::vector<std::vector<int>> receives;       // by phase: the sources, whose message of that phase it waits for
};

struct FlowTiming {
  std::vector<double> done_s;   // by rank: kNever for a member one of whose messages was lost
  std::vector<int> blocked_on;  // by rank: the source of that message, else -1
  // By phase, [destination * world + source]: when that message arrived, -1 if it did not.
  std::vector<std::vector<double>> arrival_s;
};

// Times one collective after another, keeping its buffers and the links it
// has seen: a run makes hundreds of thousands of collectives.
class FlowTimer {
 public:
  FlowTimer();
  ~FlowTimer();
  // REQUIRES: every member's part has arrived; parts and the result are indexed by rank.
  void time(const std::vector<int>& members, const std::vector<FlowPart>& parts, FlowTiming& out);

 private:
  class Run;
  std::unique_ptr<Run> run_;
};

}  // namespace sim
