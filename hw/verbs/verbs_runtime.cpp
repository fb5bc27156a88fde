#include "hw/verbs/verbs_runtime.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sched.h>

#include <random>
#include <stdexcept>
#include <thread>

#include "engine/error.hpp"
#include "engine/tags.hpp"
#include "hw/platform.hpp"
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

}  // namespace

VerbsRuntime::Peer::Peer(std::uint32_t depth, int world) : credits(depth), reader(kMaxMessageBytes, world) {}
VerbsRuntime::Peer::Peer(Peer&&) noexcept = default;
VerbsRuntime::Peer::~Peer() = default;

VerbsRuntime::VerbsRuntime(int rank, int world, const VerbsOptions& options, engine::Runtime& side_channel)
    : VerbsRuntime(rank, world, options, side_channel, libibverbs()) {}

VerbsRuntime::VerbsRuntime(int rank, int world, const VerbsOptions& options, engine::Runtime& side_channel,
                           VerbsApi& api)
    : rank_(rank),
      world_(world),
      options_(options),
      side_channel_(side_channel),
      start_(Clock::now()),
      relay_(world, -1),
      relayed_for_(world, false) {
  check_options(rank, world, options);
  peers_.reserve(world);
  for (int p = 0; p < world; ++p) peers_.emplace_back(options.queue_depth, world);
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
    peers_[p].link = std::make_unique<VerbsLink>(api, *options_.devices[p], pair, options_, seed());
    side.send(p, engine::tags::kEndpoint, engine::Payload::of(serialize(peers_[p].link->local())));
  }
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    const engine::Payload wire = side.recv(p, engine::tags::kEndpoint, options_.setup_timeout_s);
    peers_[p].link->connect(parse_endpoint(wire.bytes));
    side.send(p, engine::tags::kReady, engine::Payload{});
  }
  for (int p = 0; p < world_; ++p)
    if (p != rank_) side.recv(p, engine::tags::kReady, options_.setup_timeout_s);
}

VerbsRuntime::~VerbsRuntime() {
  const auto until = deadline_in(options_.peer_timeout_s);
  // Every peer is told this is the last frame, so it knows it has them all
  // (see from_side). A relay must hear it, to stop forwarding for us; another
  // peer is told only if a credit allows, as a peer that reads nothing more waits no goodbye.
  std::vector<bool> relays_for_us(world_, false);
  for (int relay : relay_)
    if (relay >= 0) relays_for_us[relay] = true;
  for (Peer& peer : peers_) peer.owes_close = true;
  // A peer behind a detour is owed nothing on its own queue pair (its cable is dead).
  auto pending = [&] {
    for (int p = 0; p < world_; ++p) {
      if (!live(p)) continue;
      const Peer& peer = peers_[p];
      if (relay_[p] < 0 && (!peer.out.empty() || peer.corked > 0 || peer.link->sends_in_flight())) return true;
      if (peer.owes_close && (relays_for_us[p] || peer.credits.credits() > 0)) return true;
      if (relayed_for_[p] && !peer.closed) return true;
    }
    return false;
  };
  flush_until(until, pending, [&](Clock::time_point slice_end) { progress(slice_end); });
}

double VerbsRuntime::now() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void VerbsRuntime::sleep_for(double seconds) { progress(deadline_in(seconds)); }

void VerbsRuntime::send(int dst, int tag, engine::Payload payload) {
  if (dst == rank_) throw std::invalid_argument("send to self");
  // Backpressure, as over TCP: wait while this message would take the queue
  // past its limit (a peer that takes nothing fails by the stall check).
  for (int hop = hop_to(dst); live(hop) && peers_[hop].queued_bytes > 0 &&
                              peers_[hop].queued_bytes + payload.bytes.size() > options_.max_queued_bytes;
       hop = hop_to(dst))
    progress(Clock::now() + std::chrono::milliseconds(10), -1, 0, /*flush=*/false);
  const int hop = hop_to(dst);
  if (hop == dst) {
    Peer& p = peers_[dst];
    if (!p.failure.empty()) meet_failure(dst);
    if (p.on_side) return side_channel_.send(dst, tag, std::move(payload));
  }
  if (payload.size > kMaxMessageBytes)
    throw std::invalid_argument(
        fmt::format("a {}-byte message is over the {}-byte limit", payload.size, kMaxMessageBytes));
  peers_[hop].queued_bytes += payload.bytes.size();
  peers_[hop].out.emplace_back(tag, std::move(payload), FrameRoute{.forward_to = hop == dst ? -1 : dst});
  // A stream of small messages reaps completions only when its queue does not drain.
  if (!step(hop, /*flush=*/false, /*reap=*/false) || !peers_[hop].out.empty()) step(hop, /*flush=*/false);
}

engine::Payload VerbsRuntime::recv(int src, int tag, double timeout_s) {
  if (src == rank_) throw std::invalid_argument("receive from self");
  const auto until = deadline_in(timeout_s);
  for (bool waited = false;; waited = true) {
    if (auto message = take(src, tag)) return std::move(*message);
    const int hop = hop_to(src);
    Peer& p = peers_[hop];
    if (hop == src) {
      if (!p.failure.empty()) meet_failure(src);
      if (p.on_side)
        return side_channel_.recv(src, tag, std::max(0.0, std::chrono::duration<double>(until - Clock::now()).count()));
    }
    if (waited) {
      // Silence on the verbs side: the peer may have moved to the side channel, or closed it (gone).
      if (auto message = from_side(src, tag)) return std::move(*message);
      if (!p.failure.empty()) continue;
      ask_if_silent(hop);  // before giving up: callers wait in short slices
      if (Clock::now() >= until) throw engine::Timeout(src, tag, timeout_s);
    }
    progress(std::min(until, Clock::now() + std::chrono::milliseconds(100)), src, tag);
  }
}

std::optional<engine::Payload> VerbsRuntime::take(int src, int tag) {
  if (auto message = inbox_.take(src, tag)) {
    release_credits(src);
    if (live(src) && peers_[src].credits.should_return_credits()) push(src);  // the peer may wait for them
    return message;
  }
  return relayed_inbox_.take(src, tag);
}

void VerbsRuntime::ask_if_silent(int peer) {
  Peer& p = peers_[peer];
  const auto now = Clock::now();
  if (now - p.heard_at < std::chrono::duration<double>(options_.ask_after_s)) return;
  p.heard_at = now;  // the next ask after as long again
  p.asking = true;
  step(peer);
}

void VerbsRuntime::give_up(int peer, const std::string& why) {
  fail(peer, why);
  relay_[peer] = -1;
  side_channel_.give_up(peer, why);
}

void VerbsRuntime::fail(int peer, const std::string& why) {
  for (const OutMessage& m : peers_.at(peer).out) forwarded(m);
  peers_[peer].fail(why);
  peers_[peer].queued_bytes = 0;
  peers_[peer].corked = 0;
}

void VerbsRuntime::forwarded(const OutMessage& m) {
  if (m.forwarded_for < 0) return;
  peers_[m.forwarded_for].forwarding -= m.payload.size;
  release_credits(m.forwarded_for);
}

void VerbsRuntime::release_credits(int peer) {
  Peer& p = peers_[peer];
  if (inbox_.waiting_bytes(peer) + p.forwarding > options_.max_held_bytes) return;
  while (p.credits.unread() > 0) p.credits.consume();
}

bool VerbsRuntime::route_via(int dst, int relay) {
  if (dst < 0 || dst >= world_ || relay < 0 || relay >= world_ || dst == rank_ || relay == dst || !live(relay))
    return false;
  relay_[dst] = relay;
  // The side channel may run over the same dead cable: it takes the detour too, so its close does not wait on dst.
  side_channel_.route_via(dst, relay);
  return true;
}

void VerbsRuntime::meet_failure(int peer) {
  Peer& p = peers_[peer];
  if (p.on_side) return;
  p.on_side = true;
  if (failure_raised_) return;
  failure_raised_ = true;
  throw engine::PeerFailure(peer, p.failure);
}

std::optional<engine::Payload> VerbsRuntime::from_side(int src, int tag) {
  try {
    return side_channel_.recv(src, tag, 0);
  } catch (const engine::PeerFailure& e) {
    // A closing peer's side channel goes after its last frames left, which
    // may still be on their way: while its queue pair works and has not said
    // goodbye, they get as long as a silence before an ask.
    Peer& p = peers_[src];
    const auto now = Clock::now();
    if (live(src) && !p.closed) {
      if (!p.side_lost_at) p.side_lost_at = now;
      if (now - *p.side_lost_at < std::chrono::duration<double>(options_.ask_after_s)) return std::nullopt;
    }
    fail(src, std::string("side channel lost: ") + e.what());
  } catch (const engine::Timeout&) {
  }
  return std::nullopt;
}

bool VerbsRuntime::use_secondary_network() {
  for (Peer& p : peers_) p.on_side = true;
  return true;
}

void VerbsRuntime::drop_waiting(const std::function<bool(int tag)>& stale) {
  for (const auto& dropped : inbox_.drop_if(stale)) release_credits(dropped.first);  // as if taken
  relayed_inbox_.drop_if(stale);
  side_channel_.drop_waiting(stale);
}

void VerbsRuntime::progress(Clock::time_point until, int src, int tag, bool flush) {
  for (auto busy_at = Clock::now();;) {
    bool moved = false;
    for (int p = 0; p < world_; ++p)
      if (live(p)) moved |= step(p, flush);
    if (src >= 0 && (holds(src, tag) || !peers_[hop_to(src)].failure.empty())) return;
    const auto now = Clock::now();
    if (now >= until) return;
    if (moved) {
      busy_at = now;
    } else if (now - busy_at < kSpinBeforeSleeping) {
      sched_yield();
    } else {
      wait_for_completion(until);
      busy_at = Clock::now();
    }
  }
}

// A whole round moved nothing: look at the devices' asynchronous events, then
// sleep on the peers' completion channels rather than spin a core a sleeping
// node (or a co-located rank) needs. Woken at the
// latest every 100 ms for the stall check.
void VerbsRuntime::wait_for_completion(Clock::time_point until) {
  for (int p = 0; p < world_; ++p)  // a port gone DOWN ends the link now, not after peer_timeout_s
    if (live(p))
      if (std::string why = peers_[p].link->async_failure(); !why.empty()) return fail(p, why);
  std::vector<pollfd> fds;
  for (int p = 0; p < world_; ++p) {
    if (!live(p)) continue;
    const int fd = peers_[p].link->arm();
    if (fd < 0) return std::this_thread::yield();  // no channels on this device: poll
    fds.push_back({fd, POLLIN, 0});
  }
  for (int p = 0; p < world_; ++p)
    if (live(p) && step(p)) return;  // it came before the arm
  const auto wake = std::min(until, Clock::now() + std::chrono::milliseconds(100));
  hw::poll_for(fds.data(), fds.size(),
               std::max(std::chrono::nanoseconds::zero(),
                        std::chrono::duration_cast<std::chrono::nanoseconds>(wake - Clock::now())));
  for (int p = 0; p < world_; ++p)
    if (live(p)) peers_[p].link->drain_events();
}

// One round for one peer: reap completions, then send what credits allow.
bool VerbsRuntime::step(int peer, bool flush, bool reap) {
  bool moved = false;
  try {
    if (reap) moved = peers_[peer].link->poll([&](std::span<const std::byte> frame) { on_frame(peer, frame); }) > 0;
    moved |= push(peer, flush);
  } catch (const std::exception& e) {  // LinkError, FrameError, a broken credit count
    fail(peer, e.what());
    return true;
  }
  check_stall(peer, moved);
  return moved;
}

void VerbsRuntime::on_frame(int peer, std::span<const std::byte> frame) {
  Peer& p = peers_[peer];
  const FrameHeader h = read_frame_header(frame);
  if (h.sequence != p.expected_sequence)
    throw FrameError(fmt::format("frame {} arrived where frame {} was expected (a frame was lost)", h.sequence,
                                 p.expected_sequence));
  ++p.expected_sequence;
  p.heard_at = Clock::now();
  p.owes_answer |= h.asks;
  p.closed |= h.closes;
  p.credits.on_frame(h.credits);
  for (auto stream = frame.subspan(kFrameHeaderBytes, h.used); !stream.empty();)
    if (auto message = p.reader.read(stream)) deliver(peer, std::move(*message));
  release_credits(peer);
}

void VerbsRuntime::deliver(int peer, InMessage m) {
  const FrameRoute route = m.header.route;
  const int hop = route.hop();
  if ((route.forward_to >= 0 || route.relayed_from >= 0) && (hop == rank_ || hop == peer))
    throw FrameError(fmt::format("frame routed through rank {}, not a third rank of the {}", hop, world_));
  if (route.forward_to >= 0) return forward(peer, hop, m.header.tag, std::move(m.payload));
  if (route.relayed_from >= 0) {  // the relay holds nothing for it: its frames' slots go back at once
    if (!relayed_inbox_.put(hop, m.header.tag, std::move(m.payload)))
      throw FrameError(fmt::format("relayed more from rank {} than may wait unread", hop));
    return;
  }
  if (!inbox_.put(peer, m.header.tag, std::move(m.payload)))
    throw FrameError("sent more than the bytes that may wait unread");
}

// Queued behind what `to` already has, in arrival order; sent by the next round of progress().
void VerbsRuntime::forward(int from, int to, int tag, engine::Payload message) {
  relayed_for_[from] = true;
  if (!live(to)) return;  // lost, as on a dead cable
  peers_[from].forwarding += message.size;
  peers_[to].queued_bytes += message.bytes.size();
  OutMessage& m = peers_[to].out.emplace_back(tag, std::move(message), FrameRoute{.relayed_from = from});
  m.forwarded_for = from;
}

bool VerbsRuntime::push(int peer, bool flush) {
  Peer& p = peers_[peer];
  const auto written = [&](const OutMessage& m) {
    p.queued_bytes -= m.payload.bytes.size();
    forwarded(m);
  };
  bool moved = false;
  for (;;) {
    const bool data = (!p.out.empty() || p.corked > 0) && p.credits.can_send_data();
    // An ask or its answer never takes the credit kept for returning credits;
    // the last frame, after which nothing is sent, may.
    const bool note = (p.asking || p.owes_answer) && p.credits.can_send_data();
    const bool closing = p.owes_close && p.out.empty() && p.credits.credits() > 0;
    if (!data && !note && !closing && !p.credits.should_return_credits()) break;
    const std::span<std::byte> frame = p.link->next_send_frame();
    if (frame.empty()) break;
    std::size_t used = p.corked;
    if (data) used += write_queue(p.out, frame.subspan(kFrameHeaderBytes + used), written);
    // A frame the queue could not fill waits for the next send while the peer
    // still has a quarter of the window to read: a stream of 4 KiB messages then
    // fills whole frames instead of spilling each message's last bytes into one
    // of its own. Any wait (progress) sends it.
    const bool behind = p.credits.credits() < options_.queue_depth - options_.queue_depth / 4;
    if (!flush && behind && data && !note && !closing && used < frame_capacity(frame.size())) {
      p.corked = used;
      break;
    }
    p.corked = 0;
    const bool last = p.owes_close && p.out.empty();
    write_frame_header(frame, {.asks = p.asking,
                               .closes = last,
                               .credits = p.credits.spend(),
                               .used = static_cast<std::uint32_t>(used),
                               .sequence = p.next_sequence++});
    p.link->fill_next_send();
    p.asking = p.owes_answer = false;
    p.owes_close &= !last;
    moved = true;
  }
  p.link->post_sends();  // every frame filled, in one call
  return moved;
}

// A peer that neither frees credits nor completes our sends for
// peer_timeout_s while we have frames for it is treated as dead.
void VerbsRuntime::check_stall(int peer, bool moved) {
  Peer& p = peers_[peer];
  if (!p.failure.empty()) return;
  const bool waiting = !p.out.empty() || p.corked > 0 || p.link->sends_in_flight();
  if (moved || !waiting) {
    p.stalled_since.reset();
    return;
  }
  const auto now = Clock::now();
  if (!p.stalled_since) p.stalled_since = now;
  if (now - *p.stalled_since > std::chrono::duration<double>(options_.peer_timeout_s))
    fail(peer, fmt::format("silent for {} s: no credit returned and no send completed", options_.peer_timeout_s));
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
