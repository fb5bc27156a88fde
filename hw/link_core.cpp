#include "hw/link_core.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <stdexcept>

#include "engine/base/error.hpp"
#include "hw/socket_util.hpp"

namespace hw {

namespace {

// A receive waits in slices this long, between which it checks the secondary network and may ask its peer.
constexpr auto kReceiveSlice = std::chrono::milliseconds(100);
// A send over its queue limit makes progress this long before it looks again.
constexpr auto kRoomSlice = std::chrono::milliseconds(10);

}  // namespace

LinkCore::LinkCore(int rank, int world, const LinkOptions& options, engine::Runtime* secondary)
    : rank_(rank),
      world_(world),
      options_(options),
      peers_(world, Peer(options.max_message_bytes, world)),
      secondary_(secondary),
      start_(Clock::now()),
      inbox_(options.max_unread_bytes),
      relayed_inbox_(options.max_unread_bytes) {
  if (rank < 0 || rank >= world) throw std::invalid_argument("rank out of range");
}

double LinkCore::now() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void LinkCore::sleep_for(double seconds) { progress(deadline_in(seconds)); }

void LinkCore::send(int dst, int tag, engine::Payload payload) {
  if (dst == rank_) throw std::invalid_argument("send to self");
  if (payload.size > options_.max_message_bytes)
    throw std::invalid_argument(fmt::format("a {}-byte message is over the transport's {}-byte limit", payload.size,
                                            options_.max_message_bytes));
  wait_for_room(dst, payload.bytes.size());
  const int hop = hop_to(dst);
  if (hop == dst && !peers_[dst].failure.empty()) meet_failure(dst);
  if (peers_[hop].on_secondary) return secondary_->send(dst, tag, std::move(payload));
  if (!usable(hop)) return;  // a failed relay loses what it is given
  enqueue(hop, tag, std::move(payload), hop == dst ? FrameRoute{} : FrameRoute{.forward_to = dst});
  send_now(hop);
}

// Backpressure: wait (moving bytes both ways) while the message would take the
// next hop's queue past its limit; a hop that takes nothing for stall_s fails.
void LinkCore::wait_for_room(int dst, std::uint64_t bytes) {
  Deadline give_up = deadline_in(options_.stall_s);
  for (int hop = hop_to(dst);
       usable(hop) && peers_[hop].queued_bytes > 0 && peers_[hop].queued_bytes + bytes > options_.max_queued_bytes;
       hop = hop_to(dst)) {
    const std::uint64_t before = peers_[hop].queued_bytes;
    if (Clock::now() >= give_up)
      return fail(hop, fmt::format("read nothing of {} queued bytes for {} s", before, options_.stall_s));
    progress(std::min(give_up, Clock::now() + kRoomSlice), -1, 0, /*flush=*/false);
    if (peers_[hop].queued_bytes < before) give_up = deadline_in(options_.stall_s);  // it reads: wait on
  }
}

OutMessage& LinkCore::enqueue(int hop, int tag, engine::Payload payload, FrameRoute route) {
  Peer& p = peers_[hop];
  p.queued_bytes += payload.bytes.size();
  return p.out.emplace_back(tag, std::move(payload), route);
}

engine::Payload LinkCore::recv(int src, int tag, double timeout_s) {
  if (src == rank_) throw std::invalid_argument("receive from self");
  const Deadline until = deadline_in(timeout_s);
  for (bool waited = false;; waited = true) {
    if (auto message = take(src, tag)) return std::move(*message);
    const int hop = hop_to(src);
    if (hop == src && !peers_[src].failure.empty()) meet_failure(src);
    if (peers_[hop].on_secondary)
      return secondary_->recv(src, tag, std::max(0.0, std::chrono::duration<double>(until - Clock::now()).count()));
    if (waited) {
      // Silence on this wire: the peer may have moved to the secondary network, or closed it (gone).
      if (auto message = from_secondary(src, tag)) return std::move(*message);
      if (hop == src && !peers_[src].failure.empty()) continue;
      waiting_on(hop);  // before giving up: callers wait in short slices
      if (Clock::now() >= until) throw engine::Timeout(src, tag, timeout_s);
    }
    progress(std::min(until, Clock::now() + kReceiveSlice), src, tag);
  }
}

std::optional<engine::Payload> LinkCore::take(int src, int tag) {
  if (auto message = inbox_.take(src, tag)) {
    taken(src);
    return message;
  }
  return relayed_inbox_.take(src, tag);
}

bool LinkCore::answered(int src, int tag) const {
  return inbox_.holds(src, tag) || relayed_inbox_.holds(src, tag) ||
         (hop_to(src) == src && !peers_[src].failure.empty());
}

void LinkCore::drop_waiting(const std::function<bool(int tag)>& stale) {
  for (const auto& dropped : inbox_.drop_if(stale)) released(dropped.first);  // as if taken
  relayed_inbox_.drop_if(stale);
  if (secondary_) secondary_->drop_waiting(stale);
}

void LinkCore::deliver(int peer, InMessage m) {
  const FrameRoute route = m.header.route;
  const int hop = route.hop();
  if ((route.forward_to >= 0 || route.relayed_from >= 0) && (hop == rank_ || hop == peer))
    throw FrameError(fmt::format("malformed frame: routed through rank {}, not a third rank of the {}", hop, world_));
  if (route.forward_to >= 0) return forward(peer, hop, m.header.tag, std::move(m.payload));
  if (route.relayed_from >= 0 ? !relayed_inbox_.put(hop, m.header.tag, std::move(m.payload))
                              : !inbox_.put(peer, m.header.tag, std::move(m.payload)))
    throw FrameError(fmt::format("sent more than the {} bytes that may wait unread", options_.max_unread_bytes));
}

// Queued behind what `to` already has, in arrival order; what is for a rank
// whose wire is gone vanishes, as on a dead cable.
void LinkCore::forward(int from, int to, int tag, engine::Payload message) {
  peers_[from].relayed_for = true;
  if (!usable(to)) return;
  peers_[from].forwarding += message.size;
  enqueue(to, tag, std::move(message), {.relayed_from = from}).forwarded_for = from;
}

void LinkCore::sent(int peer, const OutMessage& m) {
  peers_[peer].queued_bytes -= m.payload.bytes.size();
  if (m.forwarded_for < 0) return;
  peers_[m.forwarded_for].forwarding -= m.payload.size;
  released(m.forwarded_for);
}

void LinkCore::fail(int peer, const std::string& why) {
  Peer& p = peers_.at(peer);
  for (const OutMessage& m : p.out) sent(peer, m);  // will never leave: holds nothing any more
  p.out.clear();
  if (p.failure.empty()) p.failure = why;
  wire_failed(peer);
}

void LinkCore::give_up(int peer, const std::string& why) {
  fail(peer, why);
  peers_[peer].relay = -1;
  if (secondary_) secondary_->give_up(peer, why);
}

bool LinkCore::route_via(int dst, int relay) {
  if (dst < 0 || dst >= world_ || relay < 0 || relay >= world_ || dst == rank_ || relay == dst || !usable(relay))
    return false;
  Peer& direct = peers_[dst];
  if (direct.relay < 0) {
    // A message half sent stays: the stream must still parse should the cable come back.
    const std::size_t keep = !direct.out.empty() && direct.out.front().written > 0 ? 1 : 0;
    while (direct.out.size() > keep) {
      sent(dst, direct.out.back());
      direct.out.pop_back();
    }
  }
  direct.relay = relay;
  // The secondary network may run over the same dead cable: it takes the detour too.
  if (secondary_) secondary_->route_via(dst, relay);
  return true;
}

bool LinkCore::use_secondary_network() {
  if (!secondary_) return false;
  for (Peer& p : peers_) p.on_secondary = true;
  return true;
}

void LinkCore::meet_failure(int peer) {
  Peer& p = peers_[peer];
  if (!secondary_) throw engine::PeerFailure(peer, p.failure);
  if (p.on_secondary) return;
  p.on_secondary = true;
  if (failure_raised_) return;
  failure_raised_ = true;
  throw engine::PeerFailure(peer, p.failure);
}

std::optional<engine::Payload> LinkCore::from_secondary(int src, int tag) {
  if (!secondary_) return std::nullopt;
  try {
    return secondary_->recv(src, tag, 0);
  } catch (const engine::PeerFailure& e) {
    // A closing peer's secondary connection goes after its last messages left
    // this wire, which may still be on their way: while the wire works and the
    // peer has not said goodbye, they get secondary_grace_s.
    Peer& p = peers_[src];
    const auto now = Clock::now();
    if (usable(src) && !p.closed) {
      if (!p.secondary_lost_at) p.secondary_lost_at = now;
      if (now - *p.secondary_lost_at < std::chrono::duration<double>(options_.secondary_grace_s)) return std::nullopt;
    }
    fail(src, std::string("side channel lost: ") + e.what());
  } catch (const engine::Timeout&) {
  }
  return std::nullopt;
}

void LinkCore::progress(Clock::time_point until, int src, int tag, bool flush) {
  for (auto busy_at = Clock::now();;) {
    const bool moved = pump(flush);
    if (src >= 0 && answered(src, tag)) return;
    const auto now = Clock::now();
    if (now >= until) return;
    if (moved) {
      busy_at = now;
    } else if (now - busy_at < kSpinBeforeSleeping) {
      sched_yield();
    } else {
      wait_for_wire(until);
      busy_at = Clock::now();
    }
  }
}

void LinkCore::drain(Clock::time_point until) {
  const auto pending = [&] {
    for (int p = 0; p < world_; ++p) {
      if (!usable(p)) continue;
      const Peer& peer = peers_[p];
      // A peer behind a detour is owed nothing on its own wire (its cable is dead).
      if (peer.relay < 0 && !peer.out.empty()) return true;
      if (peer.relayed_for && !peer.closed) return true;  // its last messages may still come through
      if (wire_pending(p)) return true;
    }
    return false;
  };
  while (pending() && Clock::now() < until) progress(std::min(until, Clock::now() + std::chrono::milliseconds(50)));
}

}  // namespace hw
