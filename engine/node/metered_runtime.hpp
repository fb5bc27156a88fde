// A Runtime decorator that counts what a node sends and how long it spends
// in communication, for the report's per-node and per-link figures. A message
// on a detour counts on the cables it crosses: to its relay, and on from there.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/base/runtime.hpp"

namespace engine {

struct TrafficStats {
  double comm_s = 0;                    // time inside send/recv
  double wait_s = 0;                    // of comm_s: in recv before the peer had sent
  std::vector<std::uint64_t> bytes_to;  // by the rank at the cable's far end: the destination, or its relay
  std::vector<std::uint64_t> messages_to;
  // Of bytes_to[relay], what the relay forwarded on: by relay * world + destination.
  std::vector<std::uint64_t> relayed{};
};

class MeteredRuntime : public ForwardingRuntime {
 public:
  MeteredRuntime(Runtime& inner, TrafficStats& stats);

  void send(int dst, int tag, Payload payload) override;
  Payload recv(int src, int tag, double timeout_s) override;
  // Counts each message of the collective as send would.
  double run_flows(const Flows& flows, double timeout_s) override;
  // Detours as the transport takes them: a peer given up, or every peer once
  // on the secondary network, has none.
  bool route_via(int dst, int relay) override;
  void give_up(int peer, const std::string& why) override;
  bool use_secondary_network() override;

 private:
  template <class Wait>
  auto charged(const Wait& wait);
  template <class Wait>
  auto waiting(double start, const Wait& wait);
  void count(int dst, std::uint64_t bytes);

  TrafficStats& stats_;
  std::vector<int> relay_;  // by destination: the rank its detour goes through, or -1
};

}  // namespace engine
