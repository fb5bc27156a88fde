// engine::Runtime over TCP: one connection per peer, framed messages,
// non-blocking sockets driven by poll(); every wait is bounded. A peer's EOF
// or reset, or a malformed frame, is a PeerFailure for that rank from then on.
// Bootstrap: every rank registers with rank 0, which all-gathers the listening
// endpoints; lower ranks are then dialled by higher ones, and a barrier ends it.
// Connections that are not a rank this side waits for are dropped (hw/admission).
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "engine/inbox.hpp"
#include "engine/runtime.hpp"
#include "hw/message_stream.hpp"
#include "hw/peer_state.hpp"
#include "hw/tcp_frame.hpp"

namespace hw {

struct TcpOptions {
  std::string coordinator_host = "127.0.0.1";  // where ranks other than 0 dial rank 0
  int coordinator_port = 0;
  int coordinator_listen_fd = -1;  // rank 0 may be handed a listening socket
  // Where this rank accepts its peers (rank 0: its ranks too, on coordinator_port):
  // its own addresses, never every address of the host.
  std::vector<std::string> listen_hosts = {"127.0.0.1"};
  // The cluster's secret: a connection that cannot prove it holds it is refused.
  std::string secret;
  // Where to dial each rank (by rank; empty: the host it registered with rank 0).
  std::vector<std::string> peer_hosts;
  double bootstrap_timeout_s = 30;
  // compute() spins through its last stretch instead of sleeping to the end:
  // exact, but only where the node has a core to spare.
  bool busy_wait_compute = false;
  // A longer message from the wire fails its sender (a malformed frame); a longer send is refused.
  std::uint64_t max_message_bytes = kMaxMessageBytes;
  // Backpressure: send() waits while this much is queued for a peer that does not read.
  std::uint64_t max_queued_bytes = std::uint64_t{256} << 20;
  // What may wait unread from one peer; past it the peer is failed (engine::Inbox).
  std::uint64_t max_unread_bytes = engine::Inbox::kDefaultMaxBytesPerSender;
  // Told of every connection dropped during bootstrap ("ADDRESS:PORT on port P: reason").
  std::function<void(const std::string&)> refused = [](const std::string&) {};
};

class TcpRuntime : public engine::Runtime {
 public:
  TcpRuntime(int rank, int world, const TcpOptions& options);
  // Flushes what is still queued, forwards for the ranks it relays for until
  // they close, shuts every connection down and reads until the peers close
  // theirs (each bounded), then closes.
  ~TcpRuntime() override;

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  double now() const override;
  void sleep_for(double seconds) override;
  void compute(double seconds) override;
  void send(int dst, int tag, engine::Payload payload) override;
  engine::Payload recv(int src, int tag, double timeout_s) override;
  void drop_waiting(const std::function<bool(int tag)>& stale) override { inbox_.drop_if(stale); }
  void give_up(int peer, const std::string& why) override;
  // Frames to `dst` go to `relay` from now on, which forwards them in order
  // (reading nothing more from a rank it relays for while a queue of its is
  // past max_queued_bytes); what was queued for `dst` and not yet started is
  // dropped, as a dead cable loses it. False unless `relay` is a third rank
  // still connected.
  bool route_via(int dst, int relay) override;
  bool can_relay() const override { return true; }
  // The real bytes queued for `peer` and not yet written to its socket.
  std::uint64_t queued_bytes(int peer) const { return peers_.at(peer).queued_bytes; }

  // Every rank waits until all have called it (through rank 0).
  void barrier(double timeout_s);

 private:
  // Bytes read from a peer's socket and not yet parsed into frames: one recv
  // takes small messages whole, headers and all, and often the next ones too.
  static constexpr std::size_t kStagedBytes = std::size_t{1} << 16;
  struct Peer : PeerState<OutMessage> {
    explicit Peer(std::uint64_t max_message_bytes, int world) : reader(max_message_bytes, world) {}
    int fd = -1;
    MessageReader reader;
    std::vector<char> staged = std::vector<char>(kStagedBytes);
    std::size_t staged_at = 0, staged_end = 0;  // what is left to parse
    std::uint64_t queued_bytes = 0;             // real payload bytes in `out`
    bool hung_up = false;  // its connection closed or failed: what is left in it is all that comes
  };

  void bootstrap(const TcpOptions& options);
  // Moves bytes in both directions until `until` (steady clock) or, when
  // `src`/`tag` are given, a message for them is queued.
  void progress(std::chrono::steady_clock::time_point until, int src = -1, int tag = 0);
  void flush_writes(int peer);
  // Reads what `peer`'s socket holds, delivering each whole frame, until the
  // socket is drained, the peer fails or it is held back.
  void read_available(int peer);
  // Parses the staged bytes into messages. False when the peer failed or is
  // held back; what is left stays staged.
  bool parse_staged(int peer);
  // Whether `peer`, whose messages this rank forwards, goes unread for now: a
  // queue to another rank is past max_queued_bytes, so `peer`'s own
  // backpressure holds it and a relay keeps no more than that. Never once it
  // hung up: its socket holds all it will send, and poll reports the hang-up
  // until it is read.
  bool held_back(int peer) const;
  // A whole message from `peer`: into the inbox, or on to the rank it is for.
  void deliver(int peer, InMessage message);
  // Queues `payload` on the connection to `hop`.
  void enqueue(int hop, int tag, engine::Payload payload, FrameRoute route);
  // The rank whose connection carries messages to and from `peer`: its relay, or itself.
  int hop_to(int peer) const { return relay_.at(peer) >= 0 ? relay_[peer] : peer; }

  int rank_, world_;
  bool busy_wait_compute_;
  std::uint64_t max_message_bytes_, max_queued_bytes_, max_unread_bytes_;
  std::chrono::steady_clock::duration wake_lateness_{};  // running mean, for compute()
  std::chrono::steady_clock::time_point start_;
  std::vector<Peer> peers_;
  std::vector<int> relay_;         // by peer: the rank its detour goes through, or -1
  std::vector<bool> relayed_for_;  // by peer: it sent this rank frames to forward
  engine::Inbox inbox_;
};

}  // namespace hw
