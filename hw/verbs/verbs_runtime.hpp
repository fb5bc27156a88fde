// engine::Runtime over RDMA verbs (rdma-core on Linux, librdma on macOS):
// LinkCore on one queue pair per peer, two-sided SEND/RECV of fixed-stride frames that
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
#include <vector>

#include "engine/base/runtime.hpp"
#include "hw/link_core.hpp"
#include "hw/tcp_runtime.hpp"
#include "hw/verbs/verbs_credits.hpp"
#include "hw/verbs/verbs_options.hpp"

namespace hw {

class VerbsApi;
class VerbsLink;

class VerbsRuntime : public LinkCore {
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

 private:
  // A peer's queue pair and what travels on it besides messages.
  struct Wire {
    explicit Wire(std::uint32_t depth);
    Wire(Wire&&) noexcept;
    ~Wire();  // out of line: VerbsLink is complete only in the .cpp
    std::unique_ptr<VerbsLink> link;
    CreditWindow credits;
    std::uint64_t next_sequence = 0;      // of the next frame we send it
    std::uint64_t expected_sequence = 0;  // of the next frame it sends us
    std::size_t corked = 0;               // stream bytes in the next send frame, not yet posted
    std::optional<Clock::time_point> stalled_since;
    Clock::time_point heard_at = Clock::now();  // its last frame, or our last ask
    bool asking = false;                        // send it a frame that asks for one
    bool owes_answer = false;                   // it asked us for a frame
    bool owes_close = false;                    // we are closing: our last frame says so
  };

  void connect_all(engine::Runtime& side_channel, VerbsApi& api);
  bool pump(bool flush) override;
  void wait_for_wire(Clock::time_point until) override;
  bool connected(int peer) const override { return wires_[peer].link != nullptr; }
  void send_now(int peer) override;
  void released(int peer) override { release_credits(peer); }
  void taken(int peer) override;
  void waiting_on(int peer) override;
  bool wire_pending(int peer) const override;
  void wire_failed(int peer) override { wires_[peer].corked = 0; }
  // `flush`: send a frame the queue could not fill too (see push); `reap`:
  // poll the completions first (a system call on a software device).
  bool step(int peer, bool flush = true, bool reap = true);
  // Packs what is queued for `peer` into frames and posts them while credits
  // and send slots last, with what is owed or asked for.
  bool push(int peer, bool flush = true);
  void on_frame(int peer, std::span<const std::byte> frame);
  // `peer`'s frames are owed back while what its messages hold here is under the bound.
  void release_credits(int peer);
  void check_stall(int peer, bool moved);

  VerbsOptions verbs_;
  std::vector<Wire> wires_;
};

// What `meshinfer node` calls for transport "rdma": a TcpRuntime side channel
// joined with `tcp`, and a VerbsRuntime over it; the result owns both.
std::unique_ptr<engine::Runtime> make_verbs_runtime(int rank, int world, const TcpOptions& tcp,
                                                    const VerbsOptions& verbs);

}  // namespace hw
