// The flow level: a collective timed as a whole instead of message by message.
// Every member posts its part on the board; the last to arrive times it on
// the links as they are then (flow_timing.hpp) and wakes the others. Each
// member then sleeps until its own part is done: a few SimGrid events per
// member where the message level makes three per message.
#pragma once

#include <simgrid/forward.h>

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/flow_timing.hpp"

namespace sim {

class FlowBoard {
 public:
  explicit FlowBoard(int world);
  ~FlowBoard();

  // One collective, as the members see it; indexed by rank.
  struct Collective {
    std::vector<int> members;
    std::vector<FlowPart> parts;
    int arrived = 0, left = 0;
    bool timed = false;
    FlowTiming timing;
    std::uint64_t changes_when_opened = 0;  // state_changes() when its first member arrived
  };
  using Key = std::pair<int, long>;  // (tag, how many collectives on that tag came before)

  // The collective at `key`, opened by its first member; alive until every member left.
  Collective& join(const Key& key, const std::vector<int>& members);
  // `rank` posted its part in `c`: the last member to do so times it and wakes the others.
  void arrived(Collective& c, int rank);
  // Blocks `rank` until woken or `deadline_s`; false at the deadline.
  bool wait(int rank, double deadline_s);
  // `rank` is done with the collective at `key` (or gave up on it).
  void leave(const Key& key);
  // The links from one host to another (SimGrid's routes do not change).
  const Route& route(const simgrid::s4u::Host* from, const simgrid::s4u::Host* to);

  // Links and hosts turned off or on so far in this simulation (SimGrid's state-change signals).
  std::uint64_t state_changes() const { return state_changes_; }
  // Whether `m`'s sender `from` or a link of its way was down at any moment
  // from `left_s`, when it left, to `arrived_s`: a transfer under way fails
  // at the message level when a cable goes down, even if it comes back.
  bool lost(const simgrid::s4u::Host* from, const FlowMessage& m, double left_s, double arrived_s) const;

 private:
  int world_;
  std::map<Key, std::unique_ptr<Collective>> open_;
  std::vector<std::unique_ptr<Collective>> spare_;  // closed ones, their buffers kept
  std::map<std::pair<const simgrid::s4u::Host*, const simgrid::s4u::Host*>, Route> routes_;
  std::vector<simgrid::s4u::SemaphorePtr> wake_;  // by rank
  std::vector<char> waiting_;
  FlowTimer timer_;
  std::uint64_t state_changes_ = 0;
  // By link or host, in time order: when it was turned off (false) or on (true).
  std::unordered_map<const void*, std::vector<std::pair<double, bool>>> states_;
  static inline FlowBoard* listening_ = nullptr;  // the board SimGrid's signals reach
};

}  // namespace sim
