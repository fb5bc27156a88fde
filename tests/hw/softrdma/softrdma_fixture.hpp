// Two UC queue pairs on rdma_lo, each on its own context as two processes
// would have them, for tests of softrdma's rules. The test executable is
// linked against libsoftrdma in place of libibverbs.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace softrdma_test {

struct End {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  std::vector<std::byte> buf = std::vector<std::byte>(1 << 20);
};

// `argv` run under `env` with softrdma preloaded and `settings` (NAME=VALUE) set.
std::vector<std::string> preloaded(std::vector<std::string> settings, const std::vector<std::string>& argv);

// Opens `device` and creates PD, CQ, a UC QP in RESET and a 1 MiB MR on `e`.
void open_end(End& e, const char* device = "rdma_lo");
void close_end(End& e);

// RESET -> INIT -> RTR -> RTS towards `remote` at `mtu`. Returns the first failing call's errno, or 0.
int connect(End& local, const End& remote, ibv_mtu mtu = IBV_MTU_1024);
int to_init(End& e);

int post_recv(End& e, std::size_t offset, std::size_t bytes, std::uint64_t wr_id);
int post_send(End& e, std::size_t offset, std::size_t bytes, std::uint64_t wr_id, ibv_wr_opcode op = IBV_WR_SEND);

// Completions on `e` within `timeout_s`, until `want` of them arrived.
std::vector<ibv_wc> poll(End& e, int want, double timeout_s);

// Runs `body` in a forked child, which exits with what it returns, or with 99
// when it throws (said on stderr): never returns into the test runner.
template <typename Body>
pid_t fork_child(Body body) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  try {
    _exit(body());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child %d threw: %s\n", static_cast<int>(getpid()), e.what());
  }
  _exit(99);
}
// The child's exit code (0 = every check held), 128 + signal, or -1 when it
// had not ended after `timeout_s` (it is then killed).
int wait_child(pid_t pid, double timeout_s);
// `body` in a child: for what cannot be undone in this process (a failed stack, a namespace).
template <typename Body>
int in_child(Body body) {
  return wait_child(fork_child(body), 120);
}

// True once `device`'s port is ACTIVE, within `timeout_s`: an interface just
// set up runs only when the kernel's link watch says so, up to a second later
// (hw::NetnsMesh waits for that itself).
bool port_active_within(const char* device, double timeout_s);

class Pair : public testing::Test {
 protected:
  void SetUp() override {
    open_end(a);
    open_end(b);
  }
  void TearDown() override {
    close_end(a);
    close_end(b);
  }
  End a, b;
};

}  // namespace softrdma_test
