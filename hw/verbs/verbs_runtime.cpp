#include "hw/verbs/verbs_runtime.hpp"

#include <fmt/format.h>
#include <poll.h>

#include <random>
#include <stdexcept>
#include <thread>

#include "engine/error.hpp"
#include "engine/tags.hpp"
#include "hw/platform.hpp"
#include "hw/socket_util.hpp"
#include "hw/verbs/verbs_api.hpp"
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

VerbsRuntime::Peer::Peer(std::uint32_t depth) : credits(depth) {}
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
  for (int p = 0; p < world; ++p) peers_.emplace_back(options.queue_depth);
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
  for (int relay : relay_)
    if (relay >= 0) peers_[relay].owes_close = true;
  // A peer behind a detour is owed nothing on its own queue pair (its cable is dead).
  auto pending = [&] {
    for (int p = 0; p < world_; ++p) {
      if (!live(p)) continue;
      const Peer& peer = peers_[p];
      if (relay_[p] < 0 && (!peer.out.empty() || peer.link->sends_in_flight())) return true;
      if (peer.owes_close || (relayed_for_[p] && !peer.closed)) return true;
    }
    return false;
  };
  flush_until(until, pending, [&](Clock::time_point slice_end) { progress(slice_end); });
}

double VerbsRuntime::now() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void VerbsRuntime::sleep_for(double seconds) { progress(deadline_in(seconds)); }

void VerbsRuntime::send(int dst, int tag, engine::Payload payload) {
  if (dst == rank_) throw std::invalid_argument("send to self");
  const int hop = hop_to(dst);
  if (hop == dst) {
    Peer& p = peers_[dst];
    if (!p.failure.empty()) meet_failure(dst);
    if (p.on_side) return side_channel_.send(dst, tag, std::move(payload));
  }
  enqueue(hop, {.tag = tag, .payload = std::move(payload), .route = {.forward_to = hop == dst ? -1 : dst}});
  step(hop);
}

void VerbsRuntime::enqueue(int hop, OutMessage message) {
  message.frames = frames_for(message.payload.size, options_.frame_bytes);
  peers_[hop].out.push_back(std::move(message));
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
    peers_[src].credits.consume();
    if (live(src)) step(src);  // the credit goes back now if the peer waits for it
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
  for (const OutMessage& m : peers_.at(peer).out)
    if (m.holds_slot_of >= 0) peers_[m.holds_slot_of].credits.consume();
  peers_[peer].fail(why);
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
  for (const auto& [src, messages] : inbox_.drop_if(stale))
    for (std::size_t k = 0; k < messages; ++k) peers_[src].credits.consume();  // as if taken: the slots go back
  relayed_inbox_.drop_if(stale);
  side_channel_.drop_waiting(stale);
}

void VerbsRuntime::progress(Clock::time_point until, int src, int tag) {
  for (;;) {
    bool moved = false;
    for (int p = 0; p < world_; ++p)
      if (live(p)) moved |= step(p);
    if (src >= 0 && (holds(src, tag) || !peers_[hop_to(src)].failure.empty())) return;
    if (Clock::now() >= until) return;
    if (!moved) wait_for_completion(until);
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
bool VerbsRuntime::step(int peer) {
  bool moved = false;
  try {
    moved = peers_[peer].link->poll([&](std::span<const std::byte> frame) { on_frame(peer, frame); }) > 0;
    moved |= push(peer);
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
  p.heard_at = Clock::now();
  p.owes_answer |= h.asks;
  p.closed |= h.closes;
  p.credits.on_frame(h.credits);
  auto message = p.assembler.accept(h, frame);
  if (!message) return p.credits.consume();  // copied into the message under way, or only credits
  auto& [tag, payload] = *message;
  const int hop = h.route.hop();
  if ((h.route.forward_to >= 0 || h.route.relayed_from >= 0) && (hop >= world_ || hop == rank_ || hop == peer))
    throw FrameError(fmt::format("frame routed through rank {}, not a third rank of the {}", hop, world_));
  if (h.route.forward_to >= 0) return forward(peer, hop, tag, std::move(payload));
  if (h.route.relayed_from >= 0) {
    p.credits.consume();  // the relay's slot goes back at once: a relayed message holds none
    if (!relayed_inbox_.put(hop, tag, std::move(payload)))
      throw FrameError(fmt::format("relayed more from rank {} than may wait unread", hop));
    return;
  }
  if (!inbox_.put(peer, tag, std::move(payload)))  // its slot is owed once recv() takes it
    throw FrameError("sent more than the bytes that may wait unread");
}

// Queued behind what `to` already has, in arrival order; sent by the next round of progress().
void VerbsRuntime::forward(int from, int to, int tag, engine::Payload message) {
  relayed_for_[from] = true;
  if (!live(to)) return peers_[from].credits.consume();  // lost, as on a dead cable
  enqueue(to, {.tag = tag, .payload = std::move(message), .route = {.relayed_from = from}, .holds_slot_of = from});
}

bool VerbsRuntime::push(int peer) {
  Peer& p = peers_[peer];
  bool moved = false;
  while (!p.out.empty() && p.credits.can_send_data()) {
    const std::span<std::byte> frame = p.link->next_send_frame();
    if (frame.empty()) break;
    OutMessage& m = p.out.front();
    const std::uint32_t grant = p.credits.spend();
    pack_frame(frame, m.tag, m.payload, m.next_frame, p.next_sequence++, grant, m.route);
    p.link->post_next_send();
    moved = true;
    if (++m.next_frame < m.frames) continue;
    if (m.holds_slot_of >= 0) peers_[m.holds_slot_of].credits.consume();  // forwarded: the origin may send again
    p.out.pop_front();
  }
  if (moved) p.owes_answer = false;  // a data frame answers an ask as well
  // An ask or its answer never takes the credit kept for returning credits;
  // the last frame, after which nothing is sent, may.
  const bool optional = (p.asking || p.owes_answer) && p.credits.can_send_data();
  const bool closing = p.owes_close && p.out.empty() && p.credits.credits() > 0;
  if (p.credits.should_return_credits() || optional || closing) {
    const std::span<std::byte> frame = p.link->next_send_frame();
    if (!frame.empty()) {
      const std::uint32_t grant = p.credits.spend();
      const CreditNote note = closing ? CreditNote::kClose : p.asking ? CreditNote::kAsk : CreditNote::kNone;
      pack_credit_frame(frame, p.next_sequence++, grant, note);
      p.link->post_next_send();
      p.asking = p.owes_answer = false;
      p.owes_close &= !closing;
      moved = true;
    }
  }
  return moved;
}

// A peer that neither frees credits nor completes our sends for
// peer_timeout_s while we have frames for it is treated as dead.
void VerbsRuntime::check_stall(int peer, bool moved) {
  Peer& p = peers_[peer];
  if (!p.failure.empty()) return;
  const bool waiting = !p.out.empty() || p.link->sends_in_flight();
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
