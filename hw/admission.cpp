#include "hw/admission.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <span>
#include <stdexcept>
#include <thread>

#include "hw/membership_proof.hpp"
#include "hw/os.hpp"

namespace hw {

namespace {

// Connections in their handshake at once; beyond it the oldest is dropped, so
// a flood of strangers costs bounded memory and descriptors.
constexpr std::size_t kMaxPending = 64;
// A dialler's answer: its Hello, its proof, then the challenge this listener must answer.
constexpr std::size_t kAnswerBytes = kHelloBytes + kProofBytes + kChallengeBytes;

struct Pending {
  int fd = -1;
  std::string from;
  Deadline until;
  Challenge challenge{};
  std::array<char, kAnswerBytes> answer{};
  std::size_t got = 0;
};

}  // namespace

std::vector<Admitted> admit(const std::vector<int>& listen_fds, const std::string& secret, int count,
                            const HelloCheck& check, Deadline deadline, const RefusedFn& refused) {
  for (int fd : listen_fds) set_nonblocking(fd);
  std::vector<Admitted> in;
  std::vector<Pending> pending;
  const auto drop = [&](std::size_t i, const std::string& why) {
    refused(pending[i].from, why);
    ::close(pending[i].fd);
    pending.erase(pending.begin() + static_cast<long>(i));
  };
  // Why the answer of `p` is refused, or empty.
  const auto judge = [&](const Pending& p) -> std::string {
    try {
      const Hello h = decode_hello(p.answer.data());
      Proof proof;
      std::memcpy(proof.data(), p.answer.data() + kHelloBytes, proof.size());
      if (!proves(proof, secret, p.challenge, std::span(p.answer.data(), kHelloBytes)))
        return fmt::format("claims rank {} without the cluster's secret (a wrong or replayed proof)", h.rank);
      for (const Admitted& a : in)
        if (a.hello.rank == h.rank) return fmt::format("claims rank {}, which has already joined", h.rank);
      return check(h);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
  };
  const auto accept_all = [&](int listen_fd) {
    for (int fd; (fd = accept_cloexec(listen_fd)) >= 0;) {
      set_nonblocking(fd);
      if (pending.size() == kMaxPending) drop(0, "dropped: too many connections in their handshake");
      Pending p{fd, peer_address(fd), std::min(deadline, deadline_in(kHandshakeSeconds)), make_challenge()};
      // A fresh connection's send buffer takes a challenge whole.
      const bool sent =
          send_no_sigpipe(fd, p.challenge.data(), p.challenge.size()) == static_cast<ssize_t>(p.challenge.size());
      pending.push_back(std::move(p));
      if (!sent) drop(pending.size() - 1, "gone before its challenge was sent");
    }
  };
  const std::size_t listeners = listen_fds.size();
  try {
    while (static_cast<int>(in.size()) < count) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline)
        throw std::runtime_error(fmt::format("timed out waiting for {} more rank(s) to join", count - in.size()));
      Deadline wake = deadline;
      for (std::size_t i = pending.size(); i-- > 0;) {
        if (pending[i].until <= now)
          drop(i, fmt::format("silent for {} s in its handshake ({} of {} bytes)", kHandshakeSeconds, pending[i].got,
                              kAnswerBytes));
        else
          wake = std::min(wake, pending[i].until);
      }
      std::vector<pollfd> fds;
      for (int fd : listen_fds) fds.push_back({fd, POLLIN, 0});
      for (const Pending& p : pending) fds.push_back({p.fd, POLLIN, 0});
      const int n = poll_for(fds.data(), fds.size(), wake - now);
      if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      if (n <= 0) continue;
      for (std::size_t i = pending.size(); i-- > 0;) {
        if (fds[listeners + i].revents == 0) continue;
        Pending& p = pending[i];
        const ssize_t r = ::recv(p.fd, p.answer.data() + p.got, kAnswerBytes - p.got, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (r <= 0) {
          drop(i, r == 0 ? fmt::format("closed after {} of {} handshake bytes", p.got, kAnswerBytes)
                         : std::string("recv: ") + std::strerror(errno));
          continue;
        }
        p.got += static_cast<std::size_t>(r);
        if (p.got < kAnswerBytes) continue;
        if (const std::string why = judge(p); !why.empty()) {
          drop(i, why);
          continue;
        }
        // Only now, to a member: a stranger gets no proof to take elsewhere.
        Challenge theirs;
        std::memcpy(theirs.data(), p.answer.data() + kHelloBytes + kProofBytes, theirs.size());
        const Proof mine = prove(secret, theirs, listener_context(p.challenge));
        if (send_no_sigpipe(p.fd, mine.data(), mine.size()) != static_cast<ssize_t>(mine.size())) {
          drop(i, "gone before this rank's proof was sent");
          continue;
        }
        in.push_back({p.fd, decode_hello(p.answer.data())});
        pending.erase(pending.begin() + static_cast<long>(i));
      }
      for (std::size_t l = 0; l < listeners; ++l)
        if (fds[l].revents & POLLIN) accept_all(listen_fds[l]);
    }
  } catch (...) {
    for (const Pending& p : pending) ::close(p.fd);
    for (const Admitted& a : in) ::close(a.fd);
    throw;
  }
  while (!pending.empty()) drop(pending.size() - 1, "still in its handshake when every rank had joined");
  return in;
}

int dial_and_introduce(const std::string& host, int port, const Hello& me, const std::string& secret,
                       Deadline deadline) {
  // A listener flooded by strangers may drop this connection too: dial again.
  for (;;) {
    const int fd = dial(host, port, deadline);
    Challenge theirs;
    const Challenge mine = make_challenge();
    Proof listener_proof;
    try {
      read_exact(fd, theirs.data(), theirs.size(), deadline);
      std::vector<char> answer = encode_hello(me);
      const Proof answered = prove(secret, theirs, answer);
      answer.insert(answer.end(), answered.begin(), answered.end());
      answer.insert(answer.end(), mine.begin(), mine.end());
      write_exact(fd, answer.data(), answer.size(), deadline);
      read_exact(fd, listener_proof.data(), listener_proof.size(), deadline);
    } catch (const std::runtime_error& e) {
      ::close(fd);
      if (std::chrono::steady_clock::now() >= deadline)
        throw std::runtime_error(fmt::format("no handshake with {}:{}: {}", host, port, e.what()));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (proves(listener_proof, secret, mine, listener_context(theirs))) return fd;
    ::close(fd);  // whoever listens there is no member: never dial it again
    throw std::runtime_error(fmt::format(
        "refused {}:{}: it listens where a rank should but does not prove the cluster's secret", host, port));
  }
}

}  // namespace hw
