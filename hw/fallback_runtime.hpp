// A rank on two networks, as the `fallback` policy needs: the primary (the
// Thunderbolt mesh) until use_secondary_network(), then the secondary (10 GbE
// beside it). A receive listens on both, the active network first: a peer may
// move before this rank does (the coordinator sends its decision on the new
// network), and what it sent on the old one before it moved still counts.
// Failures count on the active network only: the old one is expected to fail.
#pragma once

#include <memory>

#include "engine/base/runtime.hpp"

namespace hw {

class FallbackRuntime : public engine::Runtime {
 public:
  // REQUIRES: both are the same rank of one world. The secondary closes first;
  // once moved, the primary then closes without waiting on its peers.
  FallbackRuntime(std::unique_ptr<engine::Runtime> primary, std::unique_ptr<engine::Runtime> secondary);
  ~FallbackRuntime() override;

  int rank() const override { return primary_->rank(); }
  int world() const override { return primary_->world(); }
  double now() const override { return primary_->now(); }
  void sleep_for(double seconds) override { active().sleep_for(seconds); }
  void compute(double seconds) override { active().compute(seconds); }
  bool use_secondary_network() override;
  // A detour is a primary network's: none once on the secondary, as in simulation.
  bool route_via(int dst, int relay) override { return !on_secondary_ && primary_->route_via(dst, relay); }
  bool can_relay() const override { return primary_->can_relay(); }
  void send(int dst, int tag, engine::Payload payload) override { active().send(dst, tag, std::move(payload)); }
  engine::Payload recv(int src, int tag, double timeout_s) override;
  void drop_waiting(const std::function<bool(int tag)>& stale) override;
  void give_up(int peer, const std::string& why) override;

 private:
  engine::Runtime& active() { return on_secondary_ ? *secondary_ : *primary_; }
  engine::Runtime& inactive() { return on_secondary_ ? *primary_ : *secondary_; }

  std::unique_ptr<engine::Runtime> primary_, secondary_;
  bool on_secondary_ = false;
};

}  // namespace hw
