#include "hw/tcp_runtime.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "engine/error.hpp"
#include "engine/tags.hpp"
#include "hw/admission.hpp"
#include "hw/platform.hpp"
#include "hw/socket_util.hpp"
#include "hw/tcp_frame.hpp"

namespace hw {

namespace {

constexpr double kCloseFlushSeconds = 10;
// How long send() waits, over its queue limit, for a peer that reads nothing.
constexpr double kSendStallSeconds = 60;
// How long a closing runtime waits for its peers to close their ends (they
// do as they finish; the reporting rank last, once it has read every report).
constexpr double kCloseDrainSeconds = 10;
// What a busy-waiting compute() spins through: longer than a sleep's usual overshoot.
constexpr auto kSpinTail = std::chrono::microseconds(200);

// poll() on `fds` until one is ready or `until`, spinning first.
int poll_until(std::vector<pollfd>& fds, std::chrono::steady_clock::time_point until) {
  using Clock = std::chrono::steady_clock;
  const auto spin_until = std::min(until, Clock::now() + kSpinBeforeSleeping);
  for (;;) {
    const int n = poll_for(fds.data(), fds.size(), std::chrono::nanoseconds(0));
    if (n != 0) return n;
    if (Clock::now() >= spin_until) return poll_for(fds.data(), fds.size(), until - Clock::now());
    sched_yield();
  }
}

}  // namespace

TcpRuntime::TcpRuntime(int rank, int world, const TcpOptions& options)
    : rank_(rank),
      world_(world),
      busy_wait_compute_(options.busy_wait_compute),
      max_message_bytes_(options.max_message_bytes),
      max_queued_bytes_(options.max_queued_bytes),
      max_unread_bytes_(options.max_unread_bytes),
      start_(std::chrono::steady_clock::now()),
      peers_(world, Peer(options.max_message_bytes, world)),
      relay_(world, -1),
      relayed_for_(world, false),
      inbox_(options.max_unread_bytes) {
  if (rank < 0 || rank >= world) throw std::invalid_argument("rank out of range");
  if (!options.peer_hosts.empty() && static_cast<int>(options.peer_hosts.size()) != world)
    throw std::invalid_argument("peer_hosts must name every rank");
  try {
    bootstrap(options);
    for (auto& p : peers_)
      if (p.fd >= 0) set_nonblocking_nodelay(p.fd);
    barrier(options.bootstrap_timeout_s);
  } catch (...) {
    for (auto& p : peers_)  // a constructor that throws runs no destructor
      if (p.fd >= 0) ::close(p.fd);
    throw;
  }
}

void TcpRuntime::bootstrap(const TcpOptions& o) {
  const Deadline deadline = deadline_in(o.bootstrap_timeout_s);
  if (world_ == 1) return;
  // Admits `count` ranks from (lowest, world) on `listen_fds`, then closes them.
  const auto admit_ranks = [&](const std::vector<int>& listen_fds, int count, int lowest) {
    const int port = local_port(listen_fds.front());
    std::vector<Admitted> joined;
    try {
      joined = admit(
          listen_fds, o.secret, count,
          [&](const Hello& h) {
            return h.rank > lowest && h.rank < world_
                       ? std::string()
                       : fmt::format("claims rank {}, not one this rank waits for", h.rank);
          },
          deadline,
          [&](const std::string& from, const std::string& why) {
            o.refused(fmt::format("{} on port {}: {}", from, port, why));
          });
    } catch (...) {
      for (int fd : listen_fds) ::close(fd);
      throw;
    }
    for (int fd : listen_fds) ::close(fd);
    for (const Admitted& a : joined) peers_[a.hello.rank].fd = a.fd;
    return joined;
  };
  if (rank_ == 0) {
    const bool own = o.coordinator_listen_fd < 0;
    const std::vector<int> listen_fds =
        own ? listen_on_each(o.listen_hosts, o.coordinator_port) : std::vector<int>{o.coordinator_listen_fd};
    // Every rank's Hello, by rank: where its peers dial it.
    std::vector<char> table(kHelloBytes * world_);
    for (const Admitted& a : admit_ranks(listen_fds, world_ - 1, 0)) {
      const std::vector<char> h = encode_hello(a.hello);
      std::copy(h.begin(), h.end(), table.begin() + static_cast<long>(kHelloBytes * a.hello.rank));
    }
    for (int r = 1; r < world_; ++r) write_exact(peers_[r].fd, table.data(), table.size(), deadline);
    return;
  }
  const std::vector<int> listen_fds = listen_on_each(o.listen_hosts, 0);
  try {
    const Hello me{rank_, local_port(listen_fds.front()), o.listen_hosts.front()};
    peers_[0].fd = dial_and_introduce(o.coordinator_host, o.coordinator_port, me, o.secret, deadline);
    std::vector<char> table(kHelloBytes * world_);
    read_exact(peers_[0].fd, table.data(), table.size(), deadline);
    // Higher ranks dial lower ones, so each pair has exactly one connection.
    for (int r = 1; r < rank_; ++r) {
      const Hello peer = decode_hello(table.data() + kHelloBytes * r);
      if (peer.rank != r)
        throw std::runtime_error(fmt::format("bootstrap: rank 0 listed rank {} as rank {}", r, peer.rank));
      peers_[r].fd =
          dial_and_introduce(o.peer_hosts.empty() ? peer.host : o.peer_hosts[r], peer.port, me, o.secret, deadline);
    }
  } catch (...) {
    for (int fd : listen_fds) ::close(fd);  // admit_ranks closes them from here on
    throw;
  }
  admit_ranks(listen_fds, world_ - 1 - rank_, rank_);
}

TcpRuntime::~TcpRuntime() {
  // A failed peer is owed nothing, nor one behind a detour (its cable is dead),
  // and one given up for silence would never close its end.
  const auto owed = [&](int r) { return peers_[r].fd >= 0 && peers_[r].failure.empty() && relay_[r] < 0; };
  const auto any_peer = [&](auto pred) {
    for (int r = 0; r < world_; ++r)
      if (pred(r)) return true;
    return false;
  };
  const auto progress_until = [&](std::chrono::steady_clock::time_point until) { progress(until); };
  flush_until(
      deadline_in(kCloseFlushSeconds),
      [&] { return any_peer([&](int r) { return owed(r) && !peers_[r].out.empty(); }); }, progress_until);
  // A relay forwards until the ranks it relays for close their ends: their last
  // report may still be on its way through.
  flush_until(
      deadline_in(kCloseDrainSeconds),
      [&] { return any_peer([&](int r) { return relayed_for_[r] && peers_[r].failure.empty(); }); }, progress_until);
  // Shut down, drain, then close: the peer reads every byte sent, this rank's last report included.
  std::vector<int> fds;
  for (int r = 0; r < world_; ++r)
    if (peers_[r].fd >= 0) {
      ::shutdown(peers_[r].fd, SHUT_WR);
      if (owed(r)) fds.push_back(peers_[r].fd);
    }
  drain_until_closed(fds, deadline_in(kCloseDrainSeconds));
  for (const auto& p : peers_)
    if (p.fd >= 0) ::close(p.fd);
}

double TcpRuntime::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void TcpRuntime::sleep_for(double seconds) { progress(deadline_in(seconds)); }

void TcpRuntime::compute(double seconds) {
  const Deadline until = deadline_in(seconds);
  if (busy_wait_compute_) {
    progress(until - kSpinTail);
    while (std::chrono::steady_clock::now() < until) progress(std::chrono::steady_clock::now());
    return;
  }
  // A sleeper wakes late by a fairly steady amount (tens of microseconds in a
  // VM, more on a loaded machine): aim that much early, so the modelled times
  // add up right even where nothing can spin.
  const Deadline aim = until - wake_lateness_;
  progress(aim);
  const auto late = std::chrono::steady_clock::now() - aim;
  wake_lateness_ += (late - wake_lateness_) / 8;
}

void TcpRuntime::barrier(double timeout_s) {
  if (rank_ == 0) {
    for (int r = 1; r < world_; ++r) recv(r, engine::tags::kBarrier, timeout_s);
    for (int r = 1; r < world_; ++r) send(r, engine::tags::kBarrier, engine::Payload{});
  } else {
    send(0, engine::tags::kBarrier, engine::Payload{});
    recv(0, engine::tags::kBarrier, timeout_s);
  }
}

void TcpRuntime::send(int dst, int tag, engine::Payload payload) {
  if (dst == rank_) throw std::invalid_argument("send to self");
  const int hop = hop_to(dst);
  Peer& p = peers_[hop];
  p.check(dst);
  if (payload.size > max_message_bytes_)
    throw std::invalid_argument(
        fmt::format("a {}-byte message is over the transport's {}-byte limit", payload.size, max_message_bytes_));
  // Backpressure: wait (moving bytes both ways) while this message would take
  // the queue past its limit; a peer that takes nothing for kSendStallSeconds is failed.
  Deadline give_up = deadline_in(kSendStallSeconds);
  for (std::uint64_t before = p.queued_bytes;
       p.failure.empty() && p.queued_bytes > 0 && p.queued_bytes + payload.bytes.size() > max_queued_bytes_;
       before = p.queued_bytes) {
    if (std::chrono::steady_clock::now() >= give_up)
      p.fail(fmt::format("read nothing of {} queued bytes for {} s", p.queued_bytes, kSendStallSeconds));
    else
      progress(std::min(give_up, std::chrono::steady_clock::now() + std::chrono::milliseconds(10)));
    if (p.queued_bytes < before) give_up = deadline_in(kSendStallSeconds);  // the peer reads: wait on
  }
  p.check(dst);
  enqueue(hop, tag, std::move(payload), hop == dst ? FrameRoute{} : FrameRoute{.forward_to = dst});
}

void TcpRuntime::enqueue(int hop, int tag, engine::Payload payload, FrameRoute route) {
  Peer& p = peers_[hop];
  p.queued_bytes += payload.bytes.size();
  p.out.emplace_back(tag, std::move(payload), route);
  flush_writes(hop);
}

bool TcpRuntime::route_via(int dst, int relay) {
  if (dst < 0 || dst >= world_ || relay < 0 || relay >= world_ || dst == rank_ || relay == rank_ || relay == dst)
    return false;
  if (peers_[relay].fd < 0 || !peers_[relay].failure.empty()) return false;
  if (relay_[dst] < 0) {
    // A frame half written stays: the stream must still parse should the cable come back.
    Peer& direct = peers_[dst];
    const std::size_t keep = !direct.out.empty() && direct.out.front().written > 0 ? 1 : 0;
    while (direct.out.size() > keep) {
      direct.queued_bytes -= direct.out.back().payload.bytes.size();
      direct.out.pop_back();
    }
  }
  relay_[dst] = relay;
  return true;
}

void TcpRuntime::give_up(int peer, const std::string& why) {
  relay_.at(peer) = -1;
  peers_[peer].fail(why);
}

engine::Payload TcpRuntime::recv(int src, int tag, double timeout_s) {
  if (!inbox_.holds(src, tag)) progress(deadline_in(timeout_s), src, tag);
  return take_after_wait(inbox_, peers_[hop_to(src)], src, tag, timeout_s);
}

// One sendmsg for as many queued frames as fit: a small message leaves with
// its header in one segment, and a burst of them in one call.
void TcpRuntime::flush_writes(int peer) {
  static const std::vector<char> zeros(1 << 16, 0);
  constexpr std::size_t kMaxParts = 64;
  Peer& p = peers_[peer];
  while (!p.out.empty() && p.failure.empty()) {
    std::array<iovec, kMaxParts> parts;
    std::size_t n = 0, asked = 0;
    const auto add = [&](const void* data, std::size_t len) {
      parts[n++] = {const_cast<void*>(data), len};
      asked += len;
    };
    for (auto f = p.out.begin(); f != p.out.end() && n + 2 <= kMaxParts; ++f) {
      if (f->written < f->header.size()) add(f->header.data() + f->written, f->header.size() - f->written);
      const std::uint64_t off = f->written > f->header.size() ? f->written - f->header.size() : 0;
      const std::uint64_t left = f->payload.size - off;
      if (left == 0) continue;
      if (!f->payload.bytes.empty()) {
        add(f->payload.bytes.data() + off, left);
      } else {
        add(zeros.data(), std::min<std::uint64_t>(left, zeros.size()));  // size-only: zeros, a buffer at a time
        if (left > zeros.size()) break;
      }
    }
    const ssize_t w = send_no_sigpipe(p.fd, parts.data(), n);
    if (w < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      const std::string why = std::string("send: ") + std::strerror(errno);
      p.hung_up = true;
      read_available(peer);  // what the peer sent before it closed still arrives
      return p.fail(why);
    }
    std::uint64_t left = static_cast<std::uint64_t>(w);
    while (!p.out.empty()) {
      OutMessage& f = p.out.front();
      const std::uint64_t took = std::min(left, f.total() - f.written);
      f.written += took;
      left -= took;
      if (!f.done()) break;
      p.queued_bytes -= f.payload.bytes.size();
      p.out.pop_front();
    }
    if (static_cast<std::size_t>(w) < asked) return;  // the socket is full
  }
}

void TcpRuntime::read_available(int peer) {
  Peer& p = peers_[peer];
  while (parse_staged(peer)) {
    // The rest of a large message goes straight to its buffer; all else through the staging buffer.
    const std::span<std::byte> rest = p.reader.rest(kStagedBytes);
    char* dst = rest.empty() ? p.staged.data() : reinterpret_cast<char*>(rest.data());
    const std::size_t want = rest.empty() ? p.staged.size() : rest.size();
    const ssize_t r = ::recv(p.fd, dst, want, 0);
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      return p.fail(std::string("recv: ") + std::strerror(errno));
    }
    if (r == 0) return p.fail("connection closed by peer");
    if (!rest.empty()) {
      if (auto message = p.reader.received(static_cast<std::size_t>(r))) deliver(peer, std::move(*message));
    } else {
      p.staged_at = 0;
      p.staged_end = static_cast<std::size_t>(r);
    }
    if (static_cast<std::size_t>(r) < want) {  // drained: poll says when more comes
      parse_staged(peer);
      return;
    }
  }
}

bool TcpRuntime::parse_staged(int peer) {
  Peer& p = peers_[peer];
  while (p.staged_at < p.staged_end && p.failure.empty() && !held_back(peer)) {
    std::span<const std::byte> in(reinterpret_cast<const std::byte*>(p.staged.data()) + p.staged_at,
                                  p.staged_end - p.staged_at);
    std::optional<InMessage> message;
    try {
      message = p.reader.read(in);
    } catch (const FrameError& e) {
      p.fail(std::string("malformed frame: ") + e.what());
      break;
    }
    p.staged_at = p.staged_end - in.size();
    if (message) deliver(peer, std::move(*message));
  }
  return p.failure.empty() && !held_back(peer);
}

bool TcpRuntime::held_back(int peer) const {
  if (!relayed_for_[peer] || peers_[peer].hung_up) return false;
  // Not the queue back to `peer`: `peer` fills none of it with what it asks us to
  // forward, and two relays holding each other back would never read again.
  for (int r = 0; r < world_; ++r)
    if (r != peer && peers_[r].failure.empty() && peers_[r].queued_bytes > max_queued_bytes_) return true;
  return false;
}

void TcpRuntime::deliver(int peer, InMessage m) {
  Peer& p = peers_[peer];
  const FrameRoute route = m.header.route;
  const int hop = std::max(route.forward_to, route.relayed_from);  // -1: the message is for this rank
  if (hop == rank_ || hop == peer) return p.fail(fmt::format("malformed frame: routed through rank {}", hop));
  if (route.forward_to >= 0) {
    relayed_for_[peer] = true;
    // Forwarded in arrival order; what is for a rank this one lost vanishes, as on a dead cable.
    const Peer& onward = peers_[hop];
    if (onward.fd >= 0 && onward.failure.empty())
      enqueue(hop, m.header.tag, std::move(m.payload), {.relayed_from = peer});
    return;
  }
  if (!inbox_.put(hop >= 0 ? hop : peer, m.header.tag, std::move(m.payload)))
    p.fail(fmt::format("sent more than the {} bytes that may wait unread", max_unread_bytes_));
}

void TcpRuntime::progress(std::chrono::steady_clock::time_point until, int src, int tag) {
  std::vector<pollfd> fds;
  std::vector<int> owner;
  for (;;) {
    // What a peer held back left staged is no longer in its socket for poll to see.
    for (int r = 0; r < world_; ++r)
      if (peers_[r].staged_at < peers_[r].staged_end && peers_[r].failure.empty()) read_available(r);
    if (src >= 0 && (inbox_.holds(src, tag) || !peers_[hop_to(src)].failure.empty())) return;
    fds.clear();
    owner.clear();
    for (int r = 0; r < world_; ++r) {
      const Peer& p = peers_[r];
      if (p.fd < 0 || !p.failure.empty()) continue;
      const bool read = !held_back(r);
      fds.push_back(pollfd{p.fd, static_cast<short>((read ? POLLIN : 0) | (p.out.empty() ? 0 : POLLOUT)), 0});
      owner.push_back(r);
    }
    const int n = poll_until(fds, until);
    if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    for (std::size_t i = 0; n > 0 && i < fds.size(); ++i) {
      if (fds[i].revents & (POLLHUP | POLLERR)) peers_[owner[i]].hung_up = true;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_available(owner[i]);
      if (fds[i].revents & POLLOUT) flush_writes(owner[i]);
    }
    if (std::chrono::steady_clock::now() >= until) {
      return;
    }
  }
}

}  // namespace hw
