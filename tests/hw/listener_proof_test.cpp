// A rank that dials checks the listener too: whoever listens where rank 0 (or
// any rank) should, without the cluster's secret, is refused and named, and
// the rank never hands it anything more.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/handshake.hpp"
#include "hw/membership_proof.hpp"
#include "hw/socket_util.hpp"
#include "hw/tcp_runtime.hpp"

namespace {

const std::string kSecret(40, 's');
constexpr std::size_t kAnswerBytes = hw::kHelloBytes + hw::kProofBytes + hw::kChallengeBytes;

// The listener's proof an impostor makes from its own challenge and the dialler's answer.
using ImpostorProof = std::function<hw::Proof(const hw::Challenge& mine, const std::vector<char>& answer)>;

// Listens on loopback as if it were rank 0 and plays the protocol once,
// answering the dialler's challenge with `proof`.
class Impostor {
 public:
  explicit Impostor(ImpostorProof proof) : listen_fd_(hw::listen_on("127.0.0.1", 0)) {
    done_ = std::async(std::launch::async, [this, proof] {
      int fd = -1;
      try {
        fd = hw::accept_before(listen_fd_, hw::deadline_in(10));
        const hw::Challenge mine = hw::make_challenge();
        std::vector<char> answer(kAnswerBytes);
        hw::write_exact(fd, mine.data(), mine.size(), hw::deadline_in(5));
        hw::read_exact(fd, answer.data(), answer.size(), hw::deadline_in(5));
        const hw::Proof p = proof(mine, answer);
        hw::write_exact(fd, p.data(), p.size(), hw::deadline_in(5));
        char byte;
        hw::read_exact(fd, &byte, 1, hw::deadline_in(5));  // waits for the dialler to hang up
      } catch (const std::runtime_error&) {
      }
      if (fd >= 0) ::close(fd);
    });
  }
  ~Impostor() {
    done_.wait();
    ::close(listen_fd_);
  }
  int port() const { return hw::local_port(listen_fd_); }
  // Whether anyone dialled again after the first connection.
  bool dialled_again() {
    done_.wait();
    if (!hw::wait_fd(listen_fd_, POLLIN, hw::deadline_in(0.2))) return false;
    ::close(hw::accept_before(listen_fd_, hw::deadline_in(0.2)));
    return true;
  }

 private:
  int listen_fd_;
  std::future<void> done_;
};

// What rank 1 of 2 says when it dials `impostor` as rank 0.
std::string dial_rank_zero(Impostor& impostor) {
  hw::TcpOptions o;
  o.coordinator_port = impostor.port();
  o.secret = kSecret;
  o.bootstrap_timeout_s = 10;
  try {
    hw::TcpRuntime rt(1, 2, o);
    return "joined";
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

hw::Challenge dialler_challenge(const std::vector<char>& answer) {
  hw::Challenge c;
  std::memcpy(c.data(), answer.data() + hw::kHelloBytes + hw::kProofBytes, c.size());
  return c;
}

TEST(ListenerProof, AListenerWithAnotherSecretIsRefusedByTheDiallerAndNamed) {
  Impostor impostor([](const hw::Challenge& mine, const std::vector<char>& answer) {
    return hw::prove(std::string(40, 'x'), dialler_challenge(answer), hw::listener_context(mine));
  });
  const std::string said = dial_rank_zero(impostor);
  EXPECT_EQ(said, "refused 127.0.0.1:" + std::to_string(impostor.port()) +
                      ": it listens where a rank should but does not prove the cluster's secret");
  EXPECT_FALSE(impostor.dialled_again());
}

TEST(ListenerProof, AListenerReflectingTheDiallersOwnProofIsRefused) {
  Impostor impostor([](const hw::Challenge&, const std::vector<char>& answer) {
    hw::Proof p;
    std::memcpy(p.data(), answer.data() + hw::kHelloBytes, p.size());
    return p;
  });
  EXPECT_NE(dial_rank_zero(impostor).find("does not prove the cluster's secret"), std::string::npos);
  EXPECT_FALSE(impostor.dialled_again());
}

TEST(ListenerProof, OnlyTheSecretsHolderCanAnswerTheDiallersChallenge) {
  const hw::Challenge listener = hw::make_challenge(), dialler = hw::make_challenge();
  const hw::Proof right = hw::prove(kSecret, dialler, hw::listener_context(listener));
  EXPECT_TRUE(hw::proves(right, kSecret, dialler, hw::listener_context(listener)));
  EXPECT_FALSE(hw::proves(right, kSecret, dialler, hw::listener_context(hw::make_challenge())))
      << "an answer bound to another connection's challenge";
  EXPECT_FALSE(hw::proves(right, std::string(40, 'x'), dialler, hw::listener_context(listener)));
}

}  // namespace
