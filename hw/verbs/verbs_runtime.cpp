#include "hw/verbs/verbs_runtime.hpp"

#include <fmt/format.h>
#include <poll.h>

#include <random>
#include <stdexcept>
#include <thread>

#include "engine/base/error.hpp"
#include "engine/base/tags.hpp"
#include "hw/os.hpp"
#include "hw/socket_util.hpp"
#include "hw/verbs/verbs_api.hpp"
#include "hw/verbs/verbs_frames.hpp"
#include "hw/verbs/verbs_link.hpp"

namespace hw {

namespace {

void check_options(int rank, int world, const VerbsOptions& o) {
  if (rank < 0 || rank >= world) throw std::invalid_argument("rank out of range");
  check_frame_stride(o.frame_bytes);
  if (static_cast<int>(o.devices.size()) != world)
    throw std::invalid_argument(fmt::format("device row has {} entries for a world of {}", o.devices.size(), world));
  for (int p = 0; p < world; ++p)
    if (p != rank && !o.devices[p])
      throw std::invalid_argument(fmt::format("rank {} -> rank {}: no device in the device matrix", rank, p));
}

LinkOptions link_options(const VerbsOptions& o) {
  return {.max_queued_bytes = o.max_queued_bytes, .stall_s = o.peer_timeout_s, .secondary_grace_s = o.ask_after_s};
}

}  // namespace

VerbsRuntime::Wire::Wire(std::uint32_t depth) : credits(depth) {}
VerbsRuntime::Wire::Wire(Wire&&) noexcept = default;
VerbsRuntime::Wire::~Wire() = default;

VerbsRuntime::VerbsRuntime(int rank, int world, const VerbsOptions& options, engine::Runtime& side_channel)
    : VerbsRuntime(rank, world, options, side_channel, libibverbs()) {}

VerbsRuntime::VerbsRuntime(int rank, int world, const VerbsOptions& options, engine::Runtime& side_channel,
                           VerbsApi& api)
    : LinkCore(rank, world, link_options(options), &side_channel), verbs_(options) {
  check_options(rank, world, options);
  wires_.reserve(world);
  for (int p = 0; p < world; ++p) wires_.emplace_back(options.queue_depth);
  connect_all(side_channel, api);
}

// Bootstrap as in the common tools: endpoints per pair over the side channel,
// INIT -> RTR -> RTS with receives posted, then a barrier so no SEND precedes
// the peer's RECVs.
void VerbsRuntime::connect_all(engine::Runtime& side, VerbsApi& api) {
  std::random_device seed;
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    const std::string pair = fmt::format("rank {} -> rank {}", rank_, p);
    wires_[p].link = std::make_unique<VerbsLink>(api, *verbs_.devices[p], pair, verbs_, seed());
    side.send(p, engine::tags::kEndpoint, engine::Payload::of(serialize(wires_[p].link->local())));
  }
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    const engine::Payload wire = side.recv(p, engine::tags::kEndpoint, verbs_.setup_timeout_s);
    wires_[p].link->connect(parse_endpoint(wire.bytes));
    side.send(p, engine::tags::kReady, engine::Payload{});
  }
  for (int p = 0; p < world_; ++p)
    if (p != rank_) side.recv(p, engine::tags::kReady, verbs_.setup_timeout_s);
}

// Every peer is told this is the last frame, so it knows it has them all (see
// LinkCore::from_secondary); see wire_pending for who must hear it.
VerbsRuntime::~VerbsRuntime() {
  for (Wire& w : wires_) w.owes_close = true;
  drain(deadline_in(verbs_.peer_timeout_s));
}

// A relay must hear our goodbye, to stop forwarding for us; another peer is
// told only if a credit allows, as a peer that reads nothing more waits no goodbye.
bool VerbsRuntime::wire_pending(int peer) const {
  const Wire& w = wires_[peer];
  if (peers_[peer].relay < 0 && (w.corked > 0 || w.link->sends_in_flight())) return true;
  if (!w.owes_close) return false;
  if (w.credits.credits() > 0) return true;
  for (const Peer& p : peers_)
    if (p.relay == peer) return true;
  return false;
}

void VerbsRuntime::send_now(int peer) {
  // A stream of small messages reaps completions only when its queue does not drain.
  if (!step(peer, /*flush=*/false, /*reap=*/false) || !peers_[peer].out.empty()) step(peer, /*flush=*/false);
}

void VerbsRuntime::taken(int peer) {
  release_credits(peer);
  if (usable(peer) && wires_[peer].credits.should_return_credits())
    step(peer, /*flush=*/true, /*reap=*/false);  // the peer may wait for them
}

// A receive from `peer` that has heard nothing for ask_after_s asks it for a frame.
void VerbsRuntime::waiting_on(int peer) {
  Wire& w = wires_[peer];
  const auto now = Clock::now();
  if (!usable(peer) || now - w.heard_at < std::chrono::duration<double>(verbs_.ask_after_s)) return;
  w.heard_at = now;  // the next ask after as long again
  w.asking = true;
  step(peer);
}

void VerbsRuntime::release_credits(int peer) {
  if (held_bytes(peer) > verbs_.max_held_bytes) return;
  CreditWindow& credits = wires_[peer].credits;
  while (credits.unread() > 0) credits.consume();
}

bool VerbsRuntime::pump(bool flush) {
  bool moved = false;
  for (int p = 0; p < world_; ++p)
    if (usable(p)) moved |= step(p, flush);
  return moved;
}

// A whole round moved nothing: look at the devices' asynchronous events, then
// sleep on the peers' completion channels rather than spin a core a sleeping
// node (or a co-located rank) needs. Woken at the
// latest every 100 ms for the stall check.
void VerbsRuntime::wait_for_wire(Clock::time_point until) {
  for (int p = 0; p < world_; ++p)  // a port gone DOWN ends the link now, not after peer_timeout_s
    if (usable(p))
      if (std::string why = wires_[p].link->async_failure(); !why.empty()) return fail(p, why);
  std::vector<pollfd> fds;
  for (int p = 0; p < world_; ++p) {
    if (!usable(p)) continue;
    const int fd = wires_[p].link->arm();
    if (fd < 0) return std::this_thread::yield();  // no channels on this device: poll
    fds.push_back({fd, POLLIN, 0});
  }
  for (int p = 0; p < world_; ++p)
    if (usable(p) && step(p)) return;  // it came before the arm
  const auto wake = std::min(until, Clock::now() + std::chrono::milliseconds(100));
  hw::poll_for(fds.data(), fds.size(),
               std::max(std::chrono::nanoseconds::zero(),
                        std::chrono::duration_cast<std::chrono::nanoseconds>(wake - Clock::now())));
  for (int p = 0; p < world_; ++p)
    if (usable(p)) wires_[p].link->drain_events();
}

// One round for one peer: reap completions, then send what credits allow.
bool VerbsRuntime::step(int peer, bool flush, bool reap) {
  bool moved = false;
  try {
    if (reap) moved = wires_[peer].link->poll([&](std::span<const std::byte> frame) { on_frame(peer, frame); }) > 0;
    moved |= push(peer, flush);
  } catch (const std::exception& e) {  // LinkError, FrameError, a broken credit count
    fail(peer, e.what());
    return true;
  }
  check_stall(peer, moved);
  return moved;
}

void VerbsRuntime::on_frame(int peer, std::span<const std::byte> frame) {
  Wire& w = wires_[peer];
  Peer& p = peers_[peer];
  const FrameHeader h = read_frame_header(frame);
  if (h.sequence != w.expected_sequence)
    throw FrameError(fmt::format("frame {} arrived where frame {} was expected (a frame was lost)", h.sequence,
                                 w.expected_sequence));
  ++w.expected_sequence;
  w.heard_at = Clock::now();
  w.owes_answer |= h.asks;
  p.closed |= h.closes;
  w.credits.on_frame(h.credits);
  for (auto stream = frame.subspan(kFrameHeaderBytes, h.used); !stream.empty();)
    if (auto message = p.reader.read(stream)) deliver(peer, std::move(*message));
  release_credits(peer);
}

bool VerbsRuntime::push(int peer, bool flush) {
  Peer& p = peers_[peer];
  Wire& w = wires_[peer];
  const auto written = [&](const OutMessage& m) { sent(peer, m); };
  bool moved = false;
  for (;;) {
    const bool data = (!p.out.empty() || w.corked > 0) && w.credits.can_send_data();
    // An ask or its answer never takes the credit kept for returning credits;
    // the last frame, after which nothing is sent, may.
    const bool note = (w.asking || w.owes_answer) && w.credits.can_send_data();
    const bool closing = w.owes_close && p.out.empty() && w.credits.credits() > 0;
    if (!data && !note && !closing && !w.credits.should_return_credits()) break;
    const std::span<std::byte> frame = w.link->next_send_frame();
    if (frame.empty()) break;
    std::size_t used = w.corked;
    if (data) used += write_queue(p.out, frame.subspan(kFrameHeaderBytes + used), written);
    // A frame the queue could not fill waits for the next send while the peer
    // still has a quarter of the window to read: a stream of 4 KiB messages then
    // fills whole frames instead of spilling each message's last bytes into one
    // of its own. Any wait (progress) sends it.
    const bool behind = w.credits.credits() < verbs_.queue_depth - verbs_.queue_depth / 4;
    if (!flush && behind && data && !note && !closing && used < frame_capacity(frame.size())) {
      w.corked = used;
      break;
    }
    w.corked = 0;
    const bool last = w.owes_close && p.out.empty();
    write_frame_header(frame, {.asks = w.asking,
                               .closes = last,
                               .credits = w.credits.spend(),
                               .used = static_cast<std::uint32_t>(used),
                               .sequence = w.next_sequence++});
    w.link->fill_next_send();
    w.asking = w.owes_answer = false;
    w.owes_close &= !last;
    moved = true;
  }
  w.link->post_sends();  // every frame filled, in one call
  return moved;
}

// A peer that neither frees credits nor completes our sends for
// peer_timeout_s while we have frames for it is treated as dead.
void VerbsRuntime::check_stall(int peer, bool moved) {
  Wire& w = wires_[peer];
  if (!peers_[peer].failure.empty()) return;
  const bool waiting = !peers_[peer].out.empty() || w.corked > 0 || w.link->sends_in_flight();
  if (moved || !waiting) {
    w.stalled_since.reset();
    return;
  }
  const auto now = Clock::now();
  if (!w.stalled_since) w.stalled_since = now;
  if (now - *w.stalled_since > std::chrono::duration<double>(verbs_.peer_timeout_s))
    fail(peer, fmt::format("silent for {} s: no credit returned and no send completed", verbs_.peer_timeout_s));
}

namespace {

// Bases are built in the order listed: the side channel before the runtime that uses it.
struct SideChannel {
  std::unique_ptr<TcpRuntime> tcp;
};

class OwningVerbsRuntime : private SideChannel, public VerbsRuntime {
 public:
  OwningVerbsRuntime(int rank, int world, const TcpOptions& tcp, const VerbsOptions& verbs)
      : SideChannel{std::make_unique<TcpRuntime>(rank, world, tcp)}, VerbsRuntime(rank, world, verbs, *this->tcp) {}
};

}  // namespace

std::unique_ptr<engine::Runtime> make_verbs_runtime(int rank, int world, const TcpOptions& tcp,
                                                    const VerbsOptions& verbs) {
  return std::make_unique<OwningVerbsRuntime>(rank, world, tcp, verbs);
}

}  // namespace hw
