// A Runtime decorator that adds latency to what this node sends to some peers
// for a while: a degraded cable's extra latency where the kernel has no netem.
// A delayed message waits here, in order per peer, and is handed on when due
// from the owner's own calls (send, recv, sleep, compute): no thread, so the
// inner runtime still has one caller. Compute runs in slices to hand them on.
#pragma once

#include <deque>
#include <vector>

#include "engine/base/runtime.hpp"
#include "engine/input/scenario.hpp"

namespace engine {

// Messages to `peer` sent in [from_s, until_s) on the run's clock take `latency_s` more.
struct AddedLatency {
  int peer = -1;
  double from_s = 0, until_s = 0;
  double latency_s = 0;
};

// The latency `s`'s link-degrade faults add to the cables of `rank`.
std::vector<AddedLatency> added_latencies(const Scenario& s, int rank);

class DelayedRuntime : public ForwardingRuntime {
 public:
  DelayedRuntime(Runtime& inner, std::vector<AddedLatency> delays);
  // Hands on what still waits (sleeping until it is due).
  ~DelayedRuntime() override;

  void sleep_for(double seconds) override;
  void compute(double seconds) override;
  // A peer found unreachable while a message to it waited fails the next send to it.
  void send(int dst, int tag, Payload payload) override;
  Payload recv(int src, int tag, double timeout_s) override;
  // Waits until every delayed message is handed on.
  void flush();

 private:
  struct Held {
    double due_s;
    int tag;
    Payload payload;
  };
  double latency_to(int dst, double t) const;
  void hand_on_due();
  double next_due() const;
  // Spends `seconds` in inner calls of `spend`, stopping to hand on messages as they fall due.
  void spend(double seconds, void (Runtime::*pass)(double));

  std::vector<AddedLatency> delays_;
  std::vector<std::deque<Held>> held_;  // by destination, in send order
  std::vector<bool> unreachable_;       // by destination: a held message to it failed
};

}  // namespace engine
