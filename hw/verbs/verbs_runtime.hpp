// engine::Runtime over RDMA verbs (rdma-core on Linux, librdma on macOS):
// one queue pair per peer, two-sided SEND/RECV of fixed-stride frames that
// carry the peer's message stream (hw/message_stream.hpp) packed end to end,
// credit flow control, every completion checked and every wait bounded. Endpoints
// are exchanged over a side channel (a TcpRuntime connected to every peer).
// A failed completion, a silent peer or a gap in a peer's frame sequence (UC
// resends nothing; a receive that hears nothing asks the peer for a frame, so
// a lost last frame shows too) raises PeerFailure for that rank. The
// side channel is also the secondary network: a peer whose queue pair failed,
// and every peer once the engine falls back, is reached over it. A detour
// (route_via) sends a peer's messages through a third rank, which forwards
// them whole and in order; what a relay holds to forward counts against its
// sender's credits as unread messages do, so the sender's credits bound it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/inbox.hpp"
#include "engine/runtime.hpp"
#include "hw/message_stream.hpp"
#include "hw/peer_state.hpp"
#include "hw/tcp_runtime.hpp"
#include "hw/verbs/verbs_credits.hpp"
#include "hw/verbs/verbs_options.hpp"

namespace hw {

class VerbsApi;
class VerbsLink;

class VerbsRuntime : public engine::Runtime {
 public:
  // Opens a queue pair to every peer on options.devices, exchanges endpoints
  // over `side_channel`, connects, and returns once every peer has posted its
  // receives. REQUIRES: side_channel has the same rank and world, reaches
  // every peer and outlives this (it also tells a dead peer from a slow one).
  // Throws LinkError naming the pair when a device is missing, down or has no
  // IPv4-mapped GID; std::invalid_argument on bad options.
  VerbsRuntime(int rank, int world, const VerbsOptions& options, engine::Runtime& side_channel);
  VerbsRuntime(int rank, int world, const VerbsOptions& options, engine::Runtime& side_channel, VerbsApi& api);
  // Sends what is still queued and tells each relay it is done; a relay
  // forwards until the ranks it relays for are done. Bounded by
  // peer_timeout_s; then destroys the queue pairs.
  ~VerbsRuntime() override;

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  double now() const override;
  void sleep_for(double seconds) override;
  void send(int dst, int tag, engine::Payload payload) override;
  engine::Payload recv(int src, int tag, double timeout_s) override;
  void drop_waiting(const std::function<bool(int tag)>& stale) override;
  // Over RDMA and over the side channel.
  void give_up(int peer, const std::string& why) override;
  // From now on every message goes over the side channel (TCP): what the
  // `fallback` policy does when the RDMA stack fails. Always true.
  bool use_secondary_network() override;
  // Messages to `dst` go through `relay` from now on, and those from `dst`
  // are taken from it; while the relay's queue pair works, `dst`'s own does
  // not matter. The side channel takes the same detour. False unless `relay`
  // is a third rank with a working queue pair.
  bool route_via(int dst, int relay) override;
  bool can_relay() const override { return true; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Peer : PeerState<OutMessage> {
    Peer(std::uint32_t depth, int world);
    Peer(Peer&&) noexcept;
    ~Peer();  // out of line: VerbsLink is complete only in the .cpp
    std::unique_ptr<VerbsLink> link;
    CreditWindow credits;
    MessageReader reader;
    std::uint64_t next_sequence = 0;      // of the next frame we send it
    std::uint64_t expected_sequence = 0;  // of the next frame it sends us
    std::uint64_t forwarding = 0;         // bytes of its messages this rank has yet to forward
    std::uint64_t queued_bytes = 0;       // real bytes in `out`
    std::size_t corked = 0;               // stream bytes in the next send frame, not yet posted
    std::optional<Clock::time_point> stalled_since;
    std::optional<Clock::time_point> side_lost_at;  // its side channel closed
    Clock::time_point heard_at = Clock::now();      // its last frame, or our last ask
    bool asking = false;                            // send it a frame that asks for one
    bool owes_answer = false;                       // it asked us for a frame
    bool on_side = false;                           // its messages go over the side channel
    bool owes_close = false;                        // we are closing: our last frame says so
    bool closed = false;                            // it said it is done
  };

  void connect_all(engine::Runtime& side_channel, VerbsApi& api);
  // Polls every live peer until `until` or, when `src` is given, a message from it with `tag`.
  // `flush` as step's: send() waiting on its queue keeps a frame it could not fill.
  void progress(Clock::time_point until, int src = -1, int tag = 0, bool flush = true);
  void wait_for_completion(Clock::time_point until);
  // `flush`: send a frame the queue could not fill too (see push); `reap`:
  // poll the completions first (a system call on a software device).
  bool step(int peer, bool flush = true, bool reap = true);
  // Packs what is queued for `peer` into frames and posts them while credits
  // and send slots last, with what is owed or asked for.
  bool push(int peer, bool flush = true);
  void on_frame(int peer, std::span<const std::byte> frame);
  void deliver(int peer, InMessage message);
  // The relay's part: `message` from `from` goes on to `to`, or is lost with a lost `to`.
  void forward(int from, int to, int tag, engine::Payload message);
  // `peer`'s frames are owed back while what its messages hold here is under the bound.
  void release_credits(int peer);
  // A message forwarded for `origin` left or was dropped: it holds nothing here any more.
  void forwarded(const OutMessage& message);
  // The oldest message from `src` with `tag`, direct or relayed.
  std::optional<engine::Payload> take(int src, int tag);
  bool holds(int src, int tag) const { return inbox_.holds(src, tag) || relayed_inbox_.holds(src, tag); }
  // PeerState::fail, and what forwarded messages that will now never leave held goes back.
  void fail(int peer, const std::string& why);
  // A receive from `peer` that has heard nothing for options_.ask_after_s asks it for a frame.
  void ask_if_silent(int peer);
  void check_stall(int peer, bool moved);
  // `peer`'s queue pair failed: the first such failure raises PeerFailure, so
  // the engine detects it and applies its policy; from then on the peer is
  // reached over the side channel (which raises its own failure when the
  // peer's process is gone). REQUIRES: peers_[peer].failure is not empty.
  void meet_failure(int peer);
  // A message `src` sent over the side channel (it moved to the secondary
  // network first), without waiting; a closed side channel fails `src`.
  std::optional<engine::Payload> from_side(int src, int tag);
  bool live(int peer) const {
    return peer != rank_ && peers_[peer].link && peers_[peer].failure.empty() && !peers_[peer].on_side;
  }
  // The rank whose queue pair carries messages to and from `peer`: its relay while that works, or itself.
  int hop_to(int peer) const { return relay_.at(peer) >= 0 && live(relay_[peer]) ? relay_[peer] : peer; }

  int rank_, world_;
  VerbsOptions options_;
  engine::Runtime& side_channel_;
  Clock::time_point start_;
  std::vector<Peer> peers_;
  std::vector<int> relay_;         // by peer: the rank its detour goes through, or -1
  std::vector<bool> relayed_for_;  // by peer: this rank forwarded its messages
  engine::Inbox inbox_;            // each message holds its sender's frame slot until taken
  engine::Inbox relayed_inbox_;    // messages that came through a relay, which holds nothing for them
  bool failure_raised_ = false;    // see meet_failure
};

// What `meshinfer node` calls for transport "rdma": a TcpRuntime side channel
// joined with `tcp`, and a VerbsRuntime over it; the result owns both.
std::unique_ptr<engine::Runtime> make_verbs_runtime(int rank, int world, const TcpOptions& tcp,
                                                    const VerbsOptions& verbs);

}  // namespace hw
