// Two UC queue pairs on rdma_lo, each on its own context as two processes
// would have them, for tests of softrdma's rules. The test executable is
// linked against libsoftrdma in place of libibverbs.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
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

// Opens rdma_lo and creates PD, CQ, a UC QP in RESET and a 1 MiB MR on `e`.
void open_end(End& e);
void close_end(End& e);

// RESET -> INIT -> RTR -> RTS towards `remote` at `mtu`. Returns the first failing call's errno, or 0.
int connect(End& local, const End& remote, ibv_mtu mtu = IBV_MTU_1024);
int to_init(End& e);

int post_recv(End& e, std::size_t offset, std::size_t bytes, std::uint64_t wr_id);
int post_send(End& e, std::size_t offset, std::size_t bytes, std::uint64_t wr_id, ibv_wr_opcode op = IBV_WR_SEND);

// Completions on `e` within `timeout_s`, until `want` of them arrived.
std::vector<ibv_wc> poll(End& e, int want, double timeout_s);

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
