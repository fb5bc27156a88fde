// hw/os: what the rest of hw/ relies on from each OS call, whichever
// branch this build compiled (Linux extras, or the POSIX fallbacks with
// MESHINFER_POSIX_ONLY).
#include "hw/os.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "hw/socket_util.hpp"

namespace {

bool cloexec(int fd) { return (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }

TEST(Platform, PipesAndSocketsAreClosedOnExec) {
  int fds[2];
  hw::pipe_cloexec(fds);
  EXPECT_TRUE(cloexec(fds[0]));
  EXPECT_TRUE(cloexec(fds[1]));
  ::close(fds[0]);
  ::close(fds[1]);

  const int listener = hw::listen_on("127.0.0.1", 0);
  EXPECT_TRUE(cloexec(listener));
  const int client = hw::dial("127.0.0.1", hw::local_port(listener), hw::deadline_in(5));
  const int server = hw::accept_before(listener, hw::deadline_in(5));
  EXPECT_TRUE(cloexec(client));
  EXPECT_TRUE(cloexec(server)) << "accepted sockets too: a rank's children must not hold its peers";
  for (int fd : {listener, client, server}) ::close(fd);
}

TEST(Platform, SendingToAPeerThatLeftIsAnErrorNotSigpipe) {
  const int listener = hw::listen_on("127.0.0.1", 0);
  const int client = hw::dial("127.0.0.1", hw::local_port(listener), hw::deadline_in(5));
  ::close(hw::accept_before(listener, hw::deadline_in(5)));
  const char byte = 1;
  ssize_t sent = 0;
  for (int i = 0; i < 1000 && sent >= 0; ++i) sent = hw::send_no_sigpipe(client, &byte, 1);  // reset, then EPIPE
  EXPECT_LT(sent, 0) << "this process is still alive: no SIGPIPE";
  EXPECT_TRUE(errno == EPIPE || errno == ECONNRESET) << std::strerror(errno);
  ::close(client);
  ::close(listener);
}

TEST(Platform, PollForReportsReadinessAndTimesOutWithoutEvents) {
  int fds[2];
  hw::pipe_cloexec(fds);
  pollfd p{fds[0], POLLIN, 0};
  EXPECT_EQ(hw::poll_for(&p, 1, std::chrono::microseconds(300)), 0);
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  EXPECT_EQ(hw::poll_for(&p, 1, std::chrono::seconds(5)), 1);
  EXPECT_TRUE(p.revents & POLLIN);
  EXPECT_EQ(hw::poll_for(&p, 1, std::chrono::nanoseconds(-5)), 1) << "a past deadline polls once";
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(Platform, SelfExecutableIsThisTestProgram) {
  const std::string self = hw::self_executable();
  EXPECT_TRUE(std::filesystem::path(self).is_absolute()) << self;
  EXPECT_EQ(std::filesystem::path(self).filename(), "hw_tests") << self;
}

}  // namespace
