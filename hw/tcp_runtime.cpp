#include "hw/tcp_runtime.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "engine/error.hpp"
#include "engine/tags.hpp"
#include "hw/platform.hpp"
#include "hw/socket_util.hpp"

namespace hw {

namespace {

constexpr std::uint32_t kMagic = 0x3146494d;  // "MIF1"
constexpr std::size_t kHeaderBytes = 24;
constexpr double kCloseFlushSeconds = 10;
// What a busy-waiting compute() spins through: longer than a sleep's usual overshoot.
constexpr auto kSpinTail = std::chrono::microseconds(200);

// A rank's listening endpoint, as all-gathered by rank 0.
struct Hello {
  std::int32_t rank = 0;
  std::int32_t port = 0;
  char host[64] = {};
};

std::vector<char> encode_header(int tag, const engine::Payload& p) {
  std::vector<char> h(kHeaderBytes, 0);
  const std::uint32_t flags = p.bytes.empty() ? 0 : 1;
  const std::int32_t t = tag;
  const std::uint64_t size = p.size;
  std::memcpy(h.data(), &kMagic, 4);
  std::memcpy(h.data() + 4, &flags, 4);
  std::memcpy(h.data() + 8, &t, 4);
  std::memcpy(h.data() + 16, &size, 8);
  return h;
}

}  // namespace

TcpRuntime::TcpRuntime(int rank, int world, const TcpOptions& options)
    : rank_(rank),
      world_(world),
      busy_wait_compute_(options.busy_wait_compute),
      start_(std::chrono::steady_clock::now()),
      peers_(world) {
  if (rank < 0 || rank >= world) throw std::invalid_argument("rank out of range");
  if (!options.peer_hosts.empty() && static_cast<int>(options.peer_hosts.size()) != world)
    throw std::invalid_argument("peer_hosts must name every rank");
  bootstrap(options);
  for (auto& p : peers_)
    if (p.fd >= 0) set_nonblocking_nodelay(p.fd);
  barrier(options.bootstrap_timeout_s);
}

void TcpRuntime::bootstrap(const TcpOptions& o) {
  const Deadline deadline = deadline_in(o.bootstrap_timeout_s);
  if (world_ == 1) return;
  if (rank_ == 0) {
    const bool own = o.coordinator_listen_fd < 0;
    const int listen_fd = own ? listen_on(o.coordinator_host, o.coordinator_port) : o.coordinator_listen_fd;
    std::vector<Hello> table(world_);
    for (int k = 1; k < world_; ++k) {
      const int fd = accept_before(listen_fd, deadline);
      Hello h;
      read_exact(fd, &h, sizeof h, deadline);
      if (h.rank <= 0 || h.rank >= world_ || peers_[h.rank].fd >= 0)
        throw std::runtime_error("bootstrap: unexpected registration from rank " + std::to_string(h.rank));
      peers_[h.rank].fd = fd;
      table[h.rank] = h;
    }
    ::close(listen_fd);
    for (int r = 1; r < world_; ++r) write_exact(peers_[r].fd, table.data(), sizeof(Hello) * world_, deadline);
    return;
  }
  const int listen_fd = listen_on(o.listen_host, 0);
  Hello me;
  me.rank = rank_;
  me.port = local_port(listen_fd);
  std::strncpy(me.host, o.listen_host.c_str(), sizeof me.host - 1);
  peers_[0].fd = dial(o.coordinator_host, o.coordinator_port, deadline);
  write_exact(peers_[0].fd, &me, sizeof me, deadline);
  std::vector<Hello> table(world_);
  read_exact(peers_[0].fd, table.data(), sizeof(Hello) * world_, deadline);
  // Higher ranks dial lower ones, so each pair has exactly one connection.
  for (int r = 1; r < rank_; ++r) {
    peers_[r].fd = dial(o.peer_hosts.empty() ? std::string(table[r].host) : o.peer_hosts[r], table[r].port, deadline);
    write_exact(peers_[r].fd, &me, sizeof me, deadline);
  }
  for (int k = rank_ + 1; k < world_; ++k) {
    const int fd = accept_before(listen_fd, deadline);
    Hello h;
    read_exact(fd, &h, sizeof h, deadline);
    if (h.rank <= rank_ || h.rank >= world_ || peers_[h.rank].fd >= 0)
      throw std::runtime_error("bootstrap: unexpected connection from rank " + std::to_string(h.rank));
    peers_[h.rank].fd = fd;
  }
  ::close(listen_fd);
}

TcpRuntime::~TcpRuntime() {
  flush_until(
      deadline_in(kCloseFlushSeconds),
      [&] {
        return std::any_of(peers_.begin(), peers_.end(),
                           [](const Peer& p) { return p.failure.empty() && !p.out.empty(); });
      },
      [&](std::chrono::steady_clock::time_point until) { progress(until); });
  for (auto& p : peers_)
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
  Peer& p = peers_.at(dst);
  if (dst == rank_) throw std::invalid_argument("send to self");
  p.check(dst);
  std::vector<char> header = encode_header(tag, payload);
  p.out.push_back(OutFrame{std::move(header), std::move(payload)});
  flush_writes(dst);
}

engine::Payload TcpRuntime::recv(int src, int tag, double timeout_s) {
  if (!inbox_.holds(src, tag)) progress(deadline_in(timeout_s), src, tag);
  return take_after_wait(inbox_, peers_.at(src), src, tag, timeout_s);
}

void TcpRuntime::flush_writes(int peer) {
  static const std::vector<char> zeros(1 << 16, 0);
  Peer& p = peers_[peer];
  while (!p.out.empty() && p.failure.empty()) {
    OutFrame& f = p.out.front();
    const char* data;
    std::size_t len;
    if (f.sent < f.header.size()) {
      data = f.header.data() + f.sent;
      len = f.header.size() - f.sent;
    } else {
      const std::uint64_t off = f.sent - f.header.size();
      len = static_cast<std::size_t>(f.payload.size - off);
      if (f.payload.bytes.empty()) {
        data = zeros.data();
        len = std::min(len, zeros.size());
      } else {
        data = reinterpret_cast<const char*>(f.payload.bytes.data()) + off;
      }
    }
    const ssize_t w = send_no_sigpipe(p.fd, data, len);
    if (w < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      return p.fail(std::string("send: ") + std::strerror(errno));
    }
    f.sent += static_cast<std::uint64_t>(w);
    if (f.sent == f.total()) p.out.pop_front();
  }
}

void TcpRuntime::read_available(int peer) {
  static thread_local std::vector<char> discard(1 << 16);
  Peer& p = peers_[peer];
  for (;;) {
    InFrame& in = p.in;
    char* dst;
    std::size_t want;
    if (in.header_got < kHeaderBytes) {
      dst = in.header.data() + in.header_got;
      want = kHeaderBytes - in.header_got;
    } else if (in.has_bytes) {
      dst = reinterpret_cast<char*>(in.bytes.data()) + in.got;
      want = static_cast<std::size_t>(in.size - in.got);
    } else {
      dst = discard.data();
      want = static_cast<std::size_t>(std::min<std::uint64_t>(in.size - in.got, discard.size()));
    }
    ssize_t r = 0;
    if (want > 0) {
      r = ::recv(p.fd, dst, want, 0);
      if (r < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        return p.fail(std::string("recv: ") + std::strerror(errno));
      }
      if (r == 0) return p.fail("connection closed by peer");
    }
    if (in.header_got < kHeaderBytes) {
      in.header_got += static_cast<std::size_t>(r);
      if (in.header_got < kHeaderBytes) continue;
      std::uint32_t magic, flags;
      std::memcpy(&magic, in.header.data(), 4);
      std::memcpy(&flags, in.header.data() + 4, 4);
      std::memcpy(&in.tag, in.header.data() + 8, 4);
      std::memcpy(&in.size, in.header.data() + 16, 8);
      if (magic != kMagic) return p.fail("corrupt frame header");
      in.has_bytes = (flags & 1) != 0;
      in.got = 0;
      if (in.has_bytes) in.bytes.resize(in.size);
    } else {
      in.got += static_cast<std::uint64_t>(r);
    }
    if (in.header_got == kHeaderBytes && in.got == in.size) {
      engine::Payload m{in.size, std::move(in.bytes)};
      inbox_.put(peer, in.tag, std::move(m));
      in = InFrame{};
    }
  }
}

void TcpRuntime::progress(std::chrono::steady_clock::time_point until, int src, int tag) {
  std::vector<pollfd> fds;
  std::vector<int> owner;
  for (;;) {
    if (src >= 0 && (inbox_.holds(src, tag) || !peers_[src].failure.empty())) return;
    fds.clear();
    owner.clear();
    for (int r = 0; r < world_; ++r) {
      const Peer& p = peers_[r];
      if (p.fd < 0 || !p.failure.empty()) continue;
      fds.push_back(pollfd{p.fd, static_cast<short>(POLLIN | (p.out.empty() ? 0 : POLLOUT)), 0});
      owner.push_back(r);
    }
    const int n = poll_for(fds.data(), fds.size(), until - std::chrono::steady_clock::now());
    if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    for (std::size_t i = 0; n > 0 && i < fds.size(); ++i) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_available(owner[i]);
      if (fds[i].revents & POLLOUT) flush_writes(owner[i]);
    }
    if (std::chrono::steady_clock::now() >= until) {
      return;
    }
  }
}

}  // namespace hw
