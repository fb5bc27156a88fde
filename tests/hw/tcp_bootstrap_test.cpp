// A TcpRuntime whose bootstrap fails closes every descriptor it opened (its
// constructor throws, so no destructor does it for it): a launcher that
// retries, or a doctor that probes again, must not run out of them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <future>
#include <stdexcept>
#include <string>

#include "hw/socket_util.hpp"
#include "hw/tcp_runtime.hpp"

namespace {

int open_descriptors() {
  int n = 0;
  for (int fd = 0; fd < 1024; ++fd) n += ::fcntl(fd, F_GETFD) != -1;
  return n;
}

int unused_port() {
  const int fd = hw::listen_on("127.0.0.1", 0), port = hw::local_port(fd);
  ::close(fd);
  return port;
}

TEST(TcpBootstrap, ARankWhoseCoordinatorNeverListensClosesEveryDescriptor) {
  const int before = open_descriptors();
  hw::TcpOptions o;
  o.coordinator_port = unused_port();
  o.bootstrap_timeout_s = 0.3;
  EXPECT_THROW(hw::TcpRuntime(1, 2, o), std::runtime_error);
  EXPECT_EQ(open_descriptors(), before);
}

TEST(TcpBootstrap, RanksLeftWaitingForAMissingRankCloseEveryDescriptor) {
  const int before = open_descriptors();
  hw::TcpOptions o;
  o.coordinator_port = unused_port();
  o.bootstrap_timeout_s = 1;
  // A world of 3 whose rank 2 never comes: rank 0 gives up waiting, and rank 1 with it.
  auto rank1 = std::async(std::launch::async, [o] {
    try {
      hw::TcpRuntime rt(1, 3, o);
      return std::string("joined");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  });
  EXPECT_THROW(hw::TcpRuntime(0, 3, o), std::runtime_error);
  EXPECT_NE(rank1.get(), "joined");
  EXPECT_EQ(open_descriptors(), before);
}

}  // namespace
