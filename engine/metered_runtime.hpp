// A Runtime decorator that counts what a node sends and how long it spends
// in communication, for the report's per-node and per-link figures.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/runtime.hpp"

namespace engine {

struct TrafficStats {
  double comm_s = 0;                    // time inside send/recv
  double wait_s = 0;                    // of comm_s: in recv before the peer had sent
  std::vector<std::uint64_t> bytes_to;  // by destination rank
  std::vector<std::uint64_t> messages_to;
};

class MeteredRuntime : public ForwardingRuntime {
 public:
  MeteredRuntime(Runtime& inner, TrafficStats& stats);

  void send(int dst, int tag, Payload payload) override;
  Payload recv(int src, int tag, double timeout_s) override;
  // Counts each message of the collective as send would.
  double run_flows(const Flows& flows, double timeout_s) override;

 private:
  template <class Wait>
  auto charged(const Wait& wait);

  TrafficStats& stats_;
};

}  // namespace engine
