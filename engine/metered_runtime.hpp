// A Runtime decorator that counts what a node sends and how long it spends
// in communication, for the report's per-node and per-link figures.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/runtime.hpp"

namespace engine {

struct TrafficStats {
  double comm_s = 0;                      // time inside send/recv
  double wait_s = 0;                      // of comm_s: in recv before the peer had sent
  std::vector<std::uint64_t> bytes_to;    // by destination rank
  std::vector<std::uint64_t> messages_to;
};

class MeteredRuntime : public Runtime {
 public:
  MeteredRuntime(Runtime& inner, TrafficStats& stats);

  int rank() const override { return inner_.rank(); }
  int world() const override { return inner_.world(); }
  double now() const override { return inner_.now(); }
  void sleep_for(double seconds) override { inner_.sleep_for(seconds); }
  void compute(double seconds) override { inner_.compute(seconds); }
  bool use_secondary_network() override { return inner_.use_secondary_network(); }
  void send(int dst, int tag, Payload payload) override;
  Payload recv(int src, int tag, double timeout_s) override;

 private:
  Runtime& inner_;
  TrafficStats& stats_;
};

}  // namespace engine
