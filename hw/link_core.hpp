// What both real transports (TcpRuntime, VerbsRuntime) do above their wire,
// written once so a fix reaches both: each peer's outgoing queue and failure,
// the inbox, detours (route_via: a third rank forwards whole messages, in
// order), backpressure, the move to a secondary network, and a close that
// drains. A transport implements the wire: one round that moves what it can
// for every peer without waiting, and a bounded sleep until a wire is ready.
// Not thread-safe: one runtime, one caller. Every wait is bounded.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/runtime.hpp"
#include "engine/node/inbox.hpp"
#include "hw/message_stream.hpp"

namespace hw {

// How long a wait polls its wire, yielding the core, before it sleeps: the
// next message of a collective is often microseconds away, less than it takes
// to wake a sleeping process.
inline constexpr auto kSpinBeforeSleeping = std::chrono::microseconds(50);

struct LinkOptions {
  // A longer send is refused; a longer message from the wire fails its sender.
  std::uint64_t max_message_bytes = kMaxMessageBytes;
  // Backpressure: send() waits while this much is queued for its next hop.
  std::uint64_t max_queued_bytes = std::uint64_t{256} << 20;
  // What may wait unread from one peer; past it the peer is failed (engine::Inbox).
  std::uint64_t max_unread_bytes = engine::Inbox::kDefaultMaxBytesPerSender;
  // A next hop that takes nothing of a full queue this long has failed.
  double stall_s = 60;
  // How long a peer whose secondary connection closed still gets for its last
  // messages on this wire (see from_secondary).
  double secondary_grace_s = 0.2;
};

class LinkCore : public engine::Runtime {
 public:
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  double now() const override;
  void sleep_for(double seconds) override;
  void send(int dst, int tag, engine::Payload payload) override;
  engine::Payload recv(int src, int tag, double timeout_s) override;
  void drop_waiting(const std::function<bool(int tag)>& stale) override;
  // Here, and on the secondary network.
  void give_up(int peer, const std::string& why) override;
  // Messages to `dst` go through `relay` from now on, and those from `dst` are
  // taken from it; what was queued for `dst` and not yet started is dropped,
  // as a dead cable loses it. While the detour stands `dst`'s own wire does not
  // matter, and a relay that fails loses what it is given, as the simulator's
  // does: detection tells. The secondary network takes the same detour. False
  // unless `relay` is a third rank with a working wire.
  bool route_via(int dst, int relay) override;
  bool can_relay() const override { return true; }
  // Every peer is reached over the secondary network from now on. False when there is none.
  bool use_secondary_network() override;
  // The real bytes queued for `peer` and not yet on its wire.
  std::uint64_t queued_bytes(int peer) const { return peers_.at(peer).queued_bytes; }

 protected:
  using Clock = std::chrono::steady_clock;

  struct Peer {
    Peer(std::uint64_t max_message_bytes, int world) : reader(max_message_bytes, world) {}
    std::deque<OutMessage> out;      // what this rank sends on its wire, oldest first
    std::string failure;             // non-empty once its wire failed; the first reason stays
    MessageReader reader;            // what it sends this rank, back into messages
    std::uint64_t queued_bytes = 0;  // real bytes in `out`
    std::uint64_t forwarding = 0;    // bytes of its messages this rank has yet to forward
    int relay = -1;                  // the rank its detour goes through
    bool relayed_for = false;        // this rank forwarded messages for it
    bool closed = false;             // it said it is done, or its connection ended
    bool on_secondary = false;       // it is reached over the secondary network
    std::optional<Clock::time_point> secondary_lost_at;
  };

  // `secondary`, when given, is where a peer goes once its wire fails and every
  // peer once use_secondary_network() is called. REQUIRES: it is the same rank
  // of the same world, reaches every peer and outlives this.
  LinkCore(int rank, int world, const LinkOptions& options, engine::Runtime* secondary = nullptr);

  // The wire. One round over every peer with a working wire, without waiting:
  // what is queued goes out, what arrived goes through deliver(). True when
  // anything moved. `flush`: a partly filled frame goes out too (verbs keeps it
  // while a send waits for room).
  virtual bool pump(bool flush) = 0;
  // Sleeps until some wire may move, or `until`.
  virtual void wait_for_wire(Clock::time_point until) = 0;
  // Whether `peer` has a wire at all.
  virtual bool connected(int peer) const = 0;
  // Sends what it can of `peer`'s queue now: a message was queued for it.
  virtual void send_now(int peer) = 0;
  // What `peer`'s messages hold here went down (dropped, forwarded or failed to forward).
  virtual void released(int /*peer*/) {}
  // A receive took one of `peer`'s messages: released, outside any wire call.
  virtual void taken(int peer) { released(peer); }
  // A receive from `peer` has waited a slice and heard nothing.
  virtual void waiting_on(int /*peer*/) {}
  // The wire still owes `peer` something besides its queue (a frame not yet
  // posted, a goodbye), so a close waits for it.
  virtual bool wire_pending(int /*peer*/) const { return false; }
  // `peer` failed: the wire forgets what it held for it.
  virtual void wire_failed(int /*peer*/) {}

  // A whole message from `peer`: into the inbox, or on to the rank it is for.
  // Throws FrameError when its route is malformed or `peer` sent more than may wait unread.
  void deliver(int peer, InMessage message);
  // The front message of `peer`'s queue left for good (the wire pops it after).
  void sent(int peer, const OutMessage& message);
  void fail(int peer, const std::string& why);
  // Runs the wire until `until` or, when `src` is given, a message from it with `tag` (or its failure).
  void progress(Clock::time_point until, int src = -1, int tag = 0, bool flush = true);
  // What a transport's destructor calls first: until `until`, sends what is
  // queued for peers with a working wire, and forwards for the ranks it relays
  // for until they are done.
  void drain(Clock::time_point until);
  // Whether `peer`'s own wire carries its messages now.
  bool usable(int peer) const {
    const Peer& p = peers_[peer];
    return peer != rank_ && connected(peer) && p.failure.empty() && !p.on_secondary;
  }
  // The rank whose wire carries messages to and from `peer`: its relay, or itself.
  int hop_to(int peer) const { return peers_.at(peer).relay >= 0 ? peers_[peer].relay : peer; }
  // The bytes of `peer`'s messages this rank holds: unread, or to forward.
  std::uint64_t held_bytes(int peer) const { return inbox_.waiting_bytes(peer) + peers_[peer].forwarding; }

  const int rank_, world_;
  const LinkOptions options_;
  std::vector<Peer> peers_;

 private:
  void wait_for_room(int dst, std::uint64_t bytes);
  OutMessage& enqueue(int hop, int tag, engine::Payload payload, FrameRoute route);
  void forward(int from, int to, int tag, engine::Payload message);
  std::optional<engine::Payload> take(int src, int tag);
  // Whether a wait for `src`'s `tag` is over: the message is here, or `src`'s own wire failed.
  bool answered(int src, int tag) const;
  // `peer`'s wire failed. Without a secondary network: PeerFailure. With one,
  // the first such failure raises PeerFailure, so the engine detects it and
  // applies its policy; from then on the peer is reached over the secondary
  // network (which raises its own failure when the peer's process is gone).
  void meet_failure(int peer);
  // A message `src` sent over the secondary network (it moved first), without
  // waiting; a closed secondary connection fails `src`.
  std::optional<engine::Payload> from_secondary(int src, int tag);

  engine::Runtime* secondary_;
  Clock::time_point start_;
  engine::Inbox inbox_;          // what each peer's own messages hold here
  engine::Inbox relayed_inbox_;  // what came through a relay, which holds nothing for it
  bool failure_raised_ = false;  // see meet_failure
};

}  // namespace hw
