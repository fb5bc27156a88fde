// engine::Runtime on SimGrid: one actor per node; one mailbox per ordered pair
// with the receiver set, so transfers start when sent (eager, like a NIC).
#pragma once

#include <simgrid/forward.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "engine/inbox.hpp"
#include "engine/runtime.hpp"
#include "sim/platform.hpp"

namespace sim {

class SimRuntime : public engine::Runtime {
 public:
  // REQUIRES: called from the actor of `rank`, inside a running Simulation.
  // `speed`: per-rank compute speed factors (1: full speed), changed by faults.
  // `channel`: a node's actors each talk on their own channel (0: the engine,
  // 1: its heartbeats), with mailboxes of their own.
  SimRuntime(int rank, const PlatformSpec& platform, const std::vector<double>& speed, int channel = 0);
  ~SimRuntime() override;

  int rank() const override { return rank_; }
  int world() const override { return static_cast<int>(platform_.hosts.size()); }
  double now() const override;
  void sleep_for(double seconds) override;
  void compute(double seconds) override;
  bool use_secondary_network() override;
  // A relay actor on `relay`'s host forwards this channel's messages to `dst`.
  bool route_via(int dst, int relay) override;
  bool can_relay() const override { return true; }
  void send(int dst, int tag, engine::Payload payload) override;
  engine::Payload recv(int src, int tag, double timeout_s) override;
  void drop_waiting(const std::function<bool(int tag)>& stale) override { inbox_.drop_if(stale); }

 private:
  // Per peer, looked up once: the send path runs millions of times per run.
  struct Peer {
    std::optional<Wire> wire;
    simgrid::s4u::Host* host = nullptr;
    simgrid::s4u::Mailbox* outbox = nullptr;
    simgrid::s4u::Mailbox* inbox = nullptr;
    // A receive still matching across calls: a timed-out wait must not drop a
    // message already on the wire.
    boost::intrusive_ptr<simgrid::s4u::Comm> pending;
    void* pending_message = nullptr;
  };

  // A hung node's processes make no progress until it answers again.
  void wait_while_hung() const;

  int rank_, channel_;
  const PlatformSpec& platform_;
  const std::vector<double>& speed_;
  bool on_secondary_ = false;
  std::vector<Peer> peers_;
  engine::Inbox inbox_{std::numeric_limits<std::uint64_t>::max()};  // no stranger sends here: unbounded
};

// Name of the mailbox carrying messages from `src` to `dst` on `channel`.
std::string mailbox_name(int src, int dst, int channel);

}  // namespace sim
