// engine::Runtime on SimGrid: one actor per node; one mailbox per ordered pair
// with the receiver set, so transfers start when sent (eager, like a NIC).
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "engine/runtime.hpp"
#include "sim/platform.hpp"

namespace simgrid::s4u {
class Host;
class Mailbox;
}  // namespace simgrid::s4u

namespace sim {

class SimRuntime : public engine::Runtime {
 public:
  // REQUIRES: called from the actor of `rank`, inside a running Simulation.
  SimRuntime(int rank, const PlatformSpec& platform);

  int rank() const override { return rank_; }
  int world() const override { return static_cast<int>(platform_.hosts.size()); }
  double now() const override;
  void sleep_for(double seconds) override;
  void send(int dst, int tag, engine::Payload payload) override;
  engine::Payload recv(int src, int tag, double timeout_s) override;

 private:
  // Per peer, looked up once: the send path runs millions of times per run.
  struct Peer {
    std::optional<Wire> wire;
    simgrid::s4u::Host* host = nullptr;
    simgrid::s4u::Mailbox* outbox = nullptr;
    simgrid::s4u::Mailbox* inbox = nullptr;
  };

  int rank_;
  const PlatformSpec& platform_;
  std::vector<Peer> peers_;
  std::map<std::pair<int, int>, std::deque<engine::Payload>> stash_;  // (src, tag)
};

// Name of the mailbox carrying messages from `src` to `dst`.
std::string mailbox_name(int src, int dst);

}  // namespace sim
