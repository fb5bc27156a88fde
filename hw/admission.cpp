#include "hw/admission.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "hw/platform.hpp"

namespace hw {

namespace {

// Connections in their handshake at once; beyond it the oldest is dropped, so
// a flood of strangers costs bounded memory and descriptors.
constexpr std::size_t kMaxPending = 64;

struct Pending {
  int fd = -1;
  std::string from;
  Deadline until;
  std::array<char, kHelloBytes> bytes{};
  std::size_t got = 0;
};

}  // namespace

std::vector<Admitted> admit(int listen_fd, int count, const HelloCheck& check, Deadline deadline,
                            const RefusedFn& refused) {
  set_nonblocking(listen_fd);
  std::vector<Admitted> in;
  std::vector<Pending> pending;
  const auto drop = [&](std::size_t i, const std::string& why) {
    refused(pending[i].from, why);
    ::close(pending[i].fd);
    pending.erase(pending.begin() + static_cast<long>(i));
  };
  // Why the Hello of `p` is refused here, or empty.
  const auto judge = [&](const Pending& p) -> std::string {
    try {
      const Hello h = decode_hello(p.bytes.data());
      for (const Admitted& a : in)
        if (a.hello.rank == h.rank) return fmt::format("claims rank {}, which has already joined", h.rank);
      return check(h);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
  };
  try {
    while (static_cast<int>(in.size()) < count) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline)
        throw std::runtime_error(fmt::format("timed out waiting for {} more rank(s) to join", count - in.size()));
      Deadline wake = deadline;
      for (std::size_t i = pending.size(); i-- > 0;) {
        if (pending[i].until <= now)
          drop(i, fmt::format("silent for {} s in its handshake ({} of {} bytes)", kHandshakeSeconds, pending[i].got,
                              kHelloBytes));
        else
          wake = std::min(wake, pending[i].until);
      }
      std::vector<pollfd> fds{{listen_fd, POLLIN, 0}};
      for (const Pending& p : pending) fds.push_back({p.fd, POLLIN, 0});
      const int n = poll_for(fds.data(), fds.size(), wake - now);
      if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      if (n <= 0) continue;
      for (std::size_t i = pending.size(); i-- > 0;) {
        if (fds[i + 1].revents == 0) continue;
        Pending& p = pending[i];
        const ssize_t r = ::recv(p.fd, p.bytes.data() + p.got, kHelloBytes - p.got, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (r <= 0) {
          drop(i, r == 0 ? fmt::format("closed after {} of {} handshake bytes", p.got, kHelloBytes)
                         : std::string("recv: ") + std::strerror(errno));
          continue;
        }
        p.got += static_cast<std::size_t>(r);
        if (p.got < kHelloBytes) continue;
        if (const std::string why = judge(p); !why.empty()) {
          drop(i, why);
          continue;
        }
        in.push_back({p.fd, decode_hello(p.bytes.data())});
        pending.erase(pending.begin() + static_cast<long>(i));
      }
      if ((fds[0].revents & POLLIN) == 0) continue;
      for (int fd; (fd = accept_cloexec(listen_fd)) >= 0;) {
        set_nonblocking(fd);
        if (pending.size() == kMaxPending) drop(0, "dropped: too many connections in their handshake");
        pending.push_back({fd, peer_address(fd), std::min(deadline, deadline_in(kHandshakeSeconds))});
      }
    }
  } catch (...) {
    for (const Pending& p : pending) ::close(p.fd);
    for (const Admitted& a : in) ::close(a.fd);
    throw;
  }
  while (!pending.empty()) drop(pending.size() - 1, "still in its handshake when every rank had joined");
  return in;
}

int dial_and_introduce(const std::string& host, int port, const Hello& me, Deadline deadline) {
  const int fd = dial(host, port, deadline);
  const std::vector<char> hello = encode_hello(me);
  try {
    write_exact(fd, hello.data(), hello.size(), deadline);
  } catch (...) {
    ::close(fd);
    throw;
  }
  return fd;
}

}  // namespace hw
