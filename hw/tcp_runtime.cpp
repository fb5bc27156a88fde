#include "hw/tcp_runtime.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "engine/base/error.hpp"
#include "engine/base/tags.hpp"
#include "hw/admission.hpp"
#include "hw/os.hpp"
#include "hw/socket_util.hpp"
#include "hw/tcp_frame.hpp"

namespace hw {

namespace {

// How long a closing runtime sends what is queued and forwards for the ranks it relays for.
constexpr double kCloseFlushSeconds = 20;
// How long send() waits, over its queue limit, for a peer that reads nothing.
constexpr double kSendStallSeconds = 60;
// How long a closing runtime waits for its peers to close their ends (they
// do as they finish; the reporting rank last, once it has read every report).
constexpr double kCloseDrainSeconds = 10;
// What a busy-waiting compute() spins through: longer than a sleep's usual overshoot.
constexpr auto kSpinTail = std::chrono::microseconds(200);

LinkOptions link_options(const TcpOptions& o) {
  return {.max_message_bytes = o.max_message_bytes,
          .max_queued_bytes = o.max_queued_bytes,
          .max_unread_bytes = o.max_unread_bytes,
          .stall_s = kSendStallSeconds};
}

}  // namespace

TcpRuntime::TcpRuntime(int rank, int world, const TcpOptions& options)
    : LinkCore(rank, world, link_options(options)), busy_wait_compute_(options.busy_wait_compute), sockets_(world) {
  if (!options.peer_hosts.empty() && static_cast<int>(options.peer_hosts.size()) != world)
    throw std::invalid_argument("peer_hosts must name every rank");
  try {
    bootstrap(options);
    for (auto& s : sockets_)
      if (s.fd >= 0) set_nonblocking_nodelay(s.fd);
    barrier(options.bootstrap_timeout_s);
  } catch (...) {
    for (auto& s : sockets_)  // a constructor that throws runs no destructor
      if (s.fd >= 0) ::close(s.fd);
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
    for (const Admitted& a : joined) sockets_[a.hello.rank].fd = a.fd;
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
    for (int r = 1; r < world_; ++r) write_exact(sockets_[r].fd, table.data(), table.size(), deadline);
    return;
  }
  const std::vector<int> listen_fds = listen_on_each(o.listen_hosts, 0);
  try {
    const Hello me{rank_, local_port(listen_fds.front()), o.listen_hosts.front()};
    sockets_[0].fd = dial_and_introduce(o.coordinator_host, o.coordinator_port, me, o.secret, deadline);
    std::vector<char> table(kHelloBytes * world_);
    read_exact(sockets_[0].fd, table.data(), table.size(), deadline);
    // Higher ranks dial lower ones, so each pair has exactly one connection.
    for (int r = 1; r < rank_; ++r) {
      const Hello peer = decode_hello(table.data() + kHelloBytes * r);
      if (peer.rank != r)
        throw std::runtime_error(fmt::format("bootstrap: rank 0 listed rank {} as rank {}", r, peer.rank));
      sockets_[r].fd =
          dial_and_introduce(o.peer_hosts.empty() ? peer.host : o.peer_hosts[r], peer.port, me, o.secret, deadline);
    }
  } catch (...) {
    for (int fd : listen_fds) ::close(fd);  // admit_ranks closes them from here on
    throw;
  }
  admit_ranks(listen_fds, world_ - 1 - rank_, rank_);
}

TcpRuntime::~TcpRuntime() {
  drain(deadline_in(kCloseFlushSeconds));
  // Shut down, read until the peers close, then close: a peer reads every
  // byte sent, this rank's last report included. A failed peer is owed
  // nothing, nor one behind a detour (its cable is dead), and one given up for
  // silence would never close its end.
  std::vector<int> fds;
  for (int r = 0; r < world_; ++r)
    if (sockets_[r].fd >= 0) {
      ::shutdown(sockets_[r].fd, SHUT_WR);
      if (usable(r) && peers_[r].relay < 0) fds.push_back(sockets_[r].fd);
    }
  drain_until_closed(fds, deadline_in(kCloseDrainSeconds));
  for (const auto& s : sockets_)
    if (s.fd >= 0) ::close(s.fd);
}

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

// One sendmsg for as many queued messages as fit: a small message leaves with
// its header in one segment, and a burst of them in one call.
void TcpRuntime::flush_writes(int peer) {
  static const std::vector<char> zeros(1 << 16, 0);
  constexpr std::size_t kMaxParts = 64;
  Peer& p = peers_[peer];
  Socket& s = sockets_[peer];
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
    const ssize_t w = send_no_sigpipe(s.fd, parts.data(), n);
    if (w < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      const std::string why = std::string("send: ") + std::strerror(errno);
      s.hung_up = true;
      read_available(peer);  // what the peer sent before it closed still arrives
      return fail(peer, why);
    }
    std::uint64_t left = static_cast<std::uint64_t>(w);
    while (!p.out.empty()) {
      OutMessage& f = p.out.front();
      const std::uint64_t took = std::min(left, f.total() - f.written);
      f.written += took;
      left -= took;
      if (!f.done()) break;
      sent(peer, f);
      p.out.pop_front();
    }
    if (static_cast<std::size_t>(w) < asked) return;  // the socket is full
  }
}

void TcpRuntime::read_available(int peer) {
  Peer& p = peers_[peer];
  Socket& s = sockets_[peer];
  while (parse_staged(peer)) {
    // The rest of a large message goes straight to its buffer; all else through the staging buffer.
    const std::span<std::byte> rest = p.reader.rest(kStagedBytes);
    char* dst = rest.empty() ? s.staged.data() : reinterpret_cast<char*>(rest.data());
    const std::size_t want = rest.empty() ? s.staged.size() : rest.size();
    const ssize_t r = ::recv(s.fd, dst, want, 0);
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      return fail(peer, std::string("recv: ") + std::strerror(errno));
    }
    if (r == 0) {
      p.closed = true;
      return fail(peer, "connection closed by peer");
    }
    if (!rest.empty()) {
      if (auto message = p.reader.received(static_cast<std::size_t>(r))) take_in(peer, std::move(*message));
    } else {
      s.staged_at = 0;
      s.staged_end = static_cast<std::size_t>(r);
    }
    if (static_cast<std::size_t>(r) < want) {  // drained: poll says when more comes
      parse_staged(peer);
      return;
    }
  }
}

bool TcpRuntime::parse_staged(int peer) {
  Peer& p = peers_[peer];
  Socket& s = sockets_[peer];
  while (s.staged_at < s.staged_end && p.failure.empty() && !held_back(peer)) {
    std::span<const std::byte> in(reinterpret_cast<const std::byte*>(s.staged.data()) + s.staged_at,
                                  s.staged_end - s.staged_at);
    std::optional<InMessage> message;
    try {
      message = p.reader.read(in);
    } catch (const FrameError& e) {
      fail(peer, std::string("malformed frame: ") + e.what());
      break;
    }
    s.staged_at = s.staged_end - in.size();
    if (message) take_in(peer, std::move(*message));
  }
  return p.failure.empty() && !held_back(peer);
}

void TcpRuntime::take_in(int peer, InMessage message) {
  try {
    deliver(peer, std::move(message));
  } catch (const FrameError& e) {
    fail(peer, e.what());
  }
}

bool TcpRuntime::held_back(int peer) const {
  if (!peers_[peer].relayed_for || sockets_[peer].hung_up) return false;
  // Not the queue back to `peer`: `peer` fills none of it with what it asks us to
  // forward, and two relays holding each other back would never read again.
  for (int r = 0; r < world_; ++r)
    if (r != peer && peers_[r].failure.empty() && peers_[r].queued_bytes > options_.max_queued_bytes) return true;
  return false;
}

bool TcpRuntime::pump(bool /*flush*/) { return poll_sockets(Clock::now()); }

void TcpRuntime::wait_for_wire(Clock::time_point until) { poll_sockets(until); }

bool TcpRuntime::poll_sockets(Clock::time_point until) {
  // What a peer held back left staged is no longer in its socket for poll to see.
  for (int r = 0; r < world_; ++r)
    if (sockets_[r].staged_at < sockets_[r].staged_end && peers_[r].failure.empty()) read_available(r);
  std::vector<pollfd>& fds = poll_fds_;
  std::vector<int>& owner = poll_owners_;
  fds.clear();
  owner.clear();
  for (int r = 0; r < world_; ++r) {
    if (!usable(r)) continue;
    const bool read = !held_back(r);
    fds.push_back(
        pollfd{sockets_[r].fd, static_cast<short>((read ? POLLIN : 0) | (peers_[r].out.empty() ? 0 : POLLOUT)), 0});
    owner.push_back(r);
  }
  const int n = poll_for(
      fds.data(), fds.size(),
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::max(Clock::duration::zero(), until - Clock::now())));
  if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
  for (std::size_t i = 0; n > 0 && i < fds.size(); ++i) {
    if (fds[i].revents & (POLLHUP | POLLERR)) sockets_[owner[i]].hung_up = true;
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_available(owner[i]);
    if (fds[i].revents & POLLOUT) flush_writes(owner[i]);
  }
  return n > 0;
}

}  // namespace hw
