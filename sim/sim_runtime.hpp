// engine::Runtime on SimGrid: one actor per node; one mailbox per ordered pair
// with the receiver set, so transfers start when sent (eager, like a NIC). The
// engine's messages are numbered, so a lost one fails its sender instead of
// letting the next of its tag stand in for it (docs/faults-and-recovery.md).
#pragma once

#include <simgrid/forward.h>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/events.hpp"
#include "engine/base/runtime.hpp"
#include "engine/node/inbox.hpp"
#include "sim/flow_board.hpp"
#include "sim/platform.hpp"

namespace sim {

// One ordered pair's numbering on the engine's channel, shared by both ends.
struct Numbering {
  engine::Sequence account;  // what the receiver took: the report's evidence
  // The sender's path the receiver found a gap on. The sender's next message
  // starts a new one, as the verbs transport goes on over its side channel
  // once a wire failed; what it sent on the broken one meanwhile is lost.
  int broken_path = -1;
};

class SimRuntime : public engine::Runtime {
 public:
  // REQUIRES: called from the actor of `rank`, inside a running Simulation.
  // `speed`: per-rank compute speed factors (1: full speed), changed by faults.
  // `channel`: a node's actors each talk on their own channel (0: the engine,
  // 1: its heartbeats), with mailboxes of their own. `flows`: the board of
  // the flow level, shared by every node's engine; nullptr: the message level.
  // `quiet_until_s`: Simulation::set_quiet_until's. `numbering`: when given,
  // messages are numbered per peer and path (Numbering, at [sender * world +
  // receiver]), and a gap fails the sender. Only the engine's channel is:
  // heartbeats travel over TCP on real processes (hw/node_process.cpp), where
  // a lost segment is sent again, not skipped, and each beat supersedes the last.
  // `rdma_failed`: when given, true once the RDMA stack failed under IP that
  // goes on; the engine's channel then meets it as the verbs transport does
  // (meet_rdma_failure), while heartbeats, TCP on real processes, go on.
  SimRuntime(int rank, const PlatformSpec& platform, const std::vector<double>& speed, int channel = 0,
             FlowBoard* flows = nullptr, double quiet_until_s = 0, std::vector<Numbering>* numbering = nullptr,
             const bool* rdma_failed = nullptr);
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
  bool times_flows() const override { return flows_ != nullptr; }
  double run_flows(const engine::Flows& flows, double timeout_s) override;
  void drop_waiting(const std::function<bool(int tag)>& stale) override;
  // Sleeps off the time deferred so far. REQUIRES: called from this rank's actor.
  void settle();

 private:
  // Per peer, looked up once: the send path runs millions of times per run.
  struct Peer {
    std::optional<Wire> wire;
    simgrid::s4u::Host* host = nullptr;
    simgrid::s4u::Mailbox* outbox = nullptr;
    simgrid::s4u::Mailbox* inbox = nullptr;
    // What this node sends the peer is numbered on its path, from 0: each
    // change of route (a detour, the secondary network, a reconnection after a
    // gap) is a new connection, as on real processes.
    int path = 0;
    std::uint64_t next_number = 0;
    struct Path {
      std::uint64_t next = 0;  // the number expected next
      bool broken = false;     // a gap was found on it: what follows on it is dropped
      bool resumes = false;    // this node moved networks: the next number to arrive is expected
      bool hole = false;       // a collective's message on it was lost: what arrives next shows the gap
    };
    std::vector<Path> from;  // what the peer sends here, by the peer's path
    // A receive still matching across calls: a timed-out wait must not drop a
    // message already on the wire.
    boost::intrusive_ptr<simgrid::s4u::Comm> pending;
    void* pending_message = nullptr;
    // The flow level's view: the peer's machine, the links to `host` (null
    // until first needed), and past a relay, the second hop's card and links.
    simgrid::s4u::Host* machine = nullptr;
    const Route* route = nullptr;
    std::optional<engine::LinkCard> onward;
    const Route* onward_route = nullptr;
  };

  // Lets `seconds` pass for this engine. While nothing can change the
  // platform, without a SimGrid activity of its own (now() counts it): the end
  // of a collective, the compute after it and the collectives after that
  // (timed from the members' own times) are slept off at once, by the next
  // message, sleep or change of route. Otherwise it sleeps them now.
  void pass(double seconds);
  // A hung node's processes make no progress until it answers again.
  void wait_while_hung() const;
  // Writes this node's part of a collective, its messages resolved to routes as now.
  void resolve(const engine::Flows& flows, FlowPart& part);
  // Whether `src`'s message numbered (`path`, `number`) is taken: true when it is
  // the next on its path, false when its path already broke. On a gap, breaks
  // the path and throws PeerFailure, as the real transports fail a peer whose
  // frame sequence skips one, instead of taking a later message as the lost one.
  bool take_in_sequence(int src, int path, std::uint64_t number);
  // What this node expects on `src`'s `path`.
  Peer::Path& path_from(int src, int path);
  // Breaks `src`'s `path` at a gap, and throws PeerFailure saying `why`.
  [[noreturn]] void fail_at_gap(int src, int path, const std::string& why);
  // A sender's next message after a gap its receiver found starts a new connection.
  void reconnect_if_broken(int dst);
  // Every peer is reached on new connections (another network): what a peer
  // sent on the old ones and lost is lost with them, not a gap in what comes here.
  void reconnect_all();
  // Once the RDMA stack failed under IP that goes on, the first message this
  // engine sends `peer` or awaits from it over a cable fails that peer, once,
  // as the verbs transport's failed queue pair does; from then on every peer is
  // reached by TCP over its cable (the verbs transport's side channel).
  void meet_rdma_failure(int peer);
  // A member whose message to this node in `c` was lost on the way
  // (FlowBoard::lost), and that message's path; -1: none.
  std::pair<int, int> lost_message(const FlowBoard::Collective& c) const;
  // A source whose messages in `c` arrived on a path a lost one left a hole in, and that path; -1: none.
  std::pair<int, int> holed_sender(const FlowBoard::Collective& c);

  int rank_, channel_;
  const PlatformSpec& platform_;
  const std::vector<double>& speed_;
  bool on_secondary_ = false;
  const bool* rdma_failed_;
  bool over_ip_ = false;  // the RDMA stack failed: the cables carry TCP
  double quiet_until_s_;
  double deferred_s_ = 0;
  std::vector<Peer> peers_;
  FlowBoard* flows_;
  std::vector<Numbering>* numbering_;
  std::map<int, long> flows_begun_;                                 // by tag: collectives started on it
  std::optional<FlowBoard::Key> flow_in_progress_;                  // resumed by the next run_flows
  engine::Inbox inbox_{std::numeric_limits<std::uint64_t>::max()};  // no stranger sends here: unbounded
};

// Name of the mailbox carrying messages from `src` to `dst` on `channel`.
std::string mailbox_name(int src, int dst, int channel);

}  // namespace sim
