// engine::Runtime over TCP: LinkCore on one connection per peer, the message
// stream written to non-blocking sockets driven by poll(); every wait is bounded. A peer's EOF
// or reset, or a malformed frame, is a PeerFailure for that rank from then on.
// Bootstrap: every rank registers with rank 0, which all-gathers the listening
// endpoints; lower ranks are then dialled by higher ones, and a barrier ends it.
// Connections that are not a rank this side waits for are dropped (hw/admission).
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "engine/node/inbox.hpp"
#include "hw/link_core.hpp"
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

class TcpRuntime : public LinkCore {
 public:
  TcpRuntime(int rank, int world, const TcpOptions& options);
  // Flushes what is still queued, forwards for the ranks it relays for until
  // they close, shuts every connection down and reads until the peers close
  // theirs (each bounded), then closes.
  ~TcpRuntime() override;

  void compute(double seconds) override;
  // Every rank waits until all have called it (through rank 0).
  void barrier(double timeout_s);

 private:
  // Bytes read from a peer's socket and not yet parsed into frames: one recv
  // takes small messages whole, headers and all, and often the next ones too.
  static constexpr std::size_t kStagedBytes = std::size_t{1} << 16;
  struct Socket {
    int fd = -1;
    std::vector<char> staged = std::vector<char>(kStagedBytes);
    std::size_t staged_at = 0, staged_end = 0;  // what is left to parse
    bool hung_up = false;  // its connection closed or failed: what is left in it is all that comes
  };

  void bootstrap(const TcpOptions& options);
  bool pump(bool flush) override;
  void wait_for_wire(Clock::time_point until) override;
  bool connected(int peer) const override { return sockets_[peer].fd >= 0; }
  void send_now(int peer) override { flush_writes(peer); }
  // One poll of every socket, waiting until `until` at most, and what it reports moved.
  bool poll_sockets(Clock::time_point until);
  void flush_writes(int peer);
  // Reads what `peer`'s socket holds, delivering each whole message, until the
  // socket is drained, the peer fails or it is held back.
  void read_available(int peer);
  // Parses the staged bytes into messages. False when the peer failed or is
  // held back; what is left stays staged.
  bool parse_staged(int peer);
  // deliver(), failing `peer` on a bad route or too much unread.
  void take_in(int peer, InMessage message);
  // Whether `peer`, whose messages this rank forwards, goes unread for now: a
  // queue to another rank is past max_queued_bytes, so `peer`'s own
  // backpressure holds it and a relay keeps no more than that. Never once it
  // hung up: its socket holds all it will send, and poll reports the hang-up
  // until it is read.
  bool held_back(int peer) const;

  bool busy_wait_compute_;
  std::chrono::steady_clock::duration wake_lateness_{};  // running mean, for compute()
  std::vector<Socket> sockets_;
  std::vector<pollfd> poll_fds_;  // poll_sockets' own, kept to spare an allocation a round
  std::vector<int> poll_owners_;  // by entry of poll_fds_: its peer
};

}  // namespace hw
