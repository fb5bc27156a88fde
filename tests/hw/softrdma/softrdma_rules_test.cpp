// softrdma refuses what macOS's RDMA stack refuses (docs/reference-facts.md#macos-rdma-over-thunderbolt) and loses
// what UC loses, called through libibverbs's API as any client calls it.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <numeric>

#include "softrdma_fixture.hpp"

namespace softrdma_test {
namespace {

void fill(End& e, std::size_t offset, std::size_t bytes, int seed) {
  for (std::size_t i = 0; i < bytes; ++i) e.buf[offset + i] = static_cast<std::byte>((i * 7 + seed) & 0xff);
}

bool same(const End& x, std::size_t xo, const End& y, std::size_t yo, std::size_t bytes) {
  return std::memcmp(x.buf.data() + xo, y.buf.data() + yo, bytes) == 0;
}

TEST(SoftRdmaDevice, ListsLoopbackAsRdmaLoWithTheIpv4MappedGidAtIndexOne) {
  End e;
  open_end(e);
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(e.ctx, 1, &port), 0);
  EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(port.max_msg_sz, 4096u);  // macOS 26.2's frame
  ibv_gid gid{};
  ASSERT_EQ(ibv_query_gid(e.ctx, 1, 1, &gid), 0);
  const std::uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
  EXPECT_EQ(std::memcmp(gid.raw, mapped, 16), 0);
  ibv_gid_entry entry{};
  ASSERT_EQ(ibv_query_gid_ex(e.ctx, 1, 1, &entry, 0), 0);
  EXPECT_EQ(entry.gid_type, IBV_GID_TYPE_ROCE_V2);
  close_end(e);
}

TEST(SoftRdmaDevice, CreatingAnRcQueuePairFailsWithEopnotsuppAsOnMacOs) {
  End e;
  open_end(e);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = e.cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  errno = 0;
  EXPECT_EQ(ibv_create_qp(e.pd, &init), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  close_end(e);
}

TEST(SoftRdmaDevice, AMemoryRegionWithLocalWriteAloneIsRefused) {
  End e;
  open_end(e);
  std::vector<std::byte> buf(4096);
  EXPECT_EQ(ibv_reg_mr(e.pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE), nullptr);
  ibv_mr* mr = ibv_reg_mr(e.pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  EXPECT_NE(mr, nullptr);
  if (mr) ibv_dereg_mr(mr);
  close_end(e);
}

TEST_F(Pair, AFrameArrivesWholeInPsnOrderAcrossPackets) {
  ASSERT_EQ(connect(a, b), 0);
  ASSERT_EQ(connect(b, a), 0);
  ASSERT_EQ(post_recv(b, 0, 4096, 11), 0);
  fill(a, 0, 4096, 3);
  ASSERT_EQ(post_send(a, 0, 4096, 21), 0);  // four packets at a 1024-byte path MTU
  const auto sent = poll(a, 1, 5), got = poll(b, 1, 5);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(got[0].wr_id, 11u);
  EXPECT_EQ(got[0].byte_len, 4096u);
  EXPECT_TRUE(same(a, 0, b, 0, 4096));
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].opcode, IBV_WC_SEND);
}

TEST_F(Pair, RdmaWriteIsRefusedOnlySendExists) {
  ASSERT_EQ(connect(a, b), 0);
  EXPECT_EQ(post_send(a, 0, 64, 1, IBV_WR_RDMA_WRITE), EOPNOTSUPP);
  EXPECT_EQ(post_send(a, 0, 64, 1, IBV_WR_RDMA_READ), EOPNOTSUPP);
}

TEST_F(Pair, AReceivePostedBeforeRtsIsRefused) {
  EXPECT_NE(post_recv(b, 0, 4096, 1), 0);  // RESET
  ASSERT_EQ(to_init(b), 0);
  EXPECT_EQ(post_recv(b, 0, 4096, 1), EINVAL);  // INIT: macOS refuses it, rdma-core takes it
}

TEST_F(Pair, ModifyQpRefusesMasksTheManPageDoesNotListForUc) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  EXPECT_EQ(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);  // no ACCESS_FLAGS
  EXPECT_EQ(
      ibv_modify_qp(a.qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | IBV_QP_SQ_PSN),
      EINVAL);  // SQ_PSN belongs to RTS
  attr.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN), EINVAL);  // RESET -> RTS skips two states
  ASSERT_EQ(to_init(a), 0);
  attr = {};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_1024;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.grh.sgid_index = 1;
  ibv_query_gid(b.ctx, 1, 1, &attr.ah_attr.grh.dgid);
  EXPECT_EQ(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN), EINVAL);
  EXPECT_EQ(ibv_modify_qp(a.qp, &attr,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
            EINVAL);  // RC's attributes on a UC queue pair
}

TEST_F(Pair, RtrTowardsTheLinkLocalGidIsRefused) {
  ASSERT_EQ(to_init(a), 0);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_1024;
  attr.dest_qp_num = b.qp->qp_num;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.grh.sgid_index = 0;
  ibv_query_gid(b.ctx, 1, 0, &attr.ah_attr.grh.dgid);
  EXPECT_EQ(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN),
            EINVAL);
}

TEST_F(Pair, AFrameOverTheMaximumIsDroppedAndTheNextOneArrives) {
  ASSERT_EQ(connect(a, b), 0);
  ASSERT_EQ(connect(b, a), 0);
  ASSERT_EQ(post_recv(b, 0, 16384, 1), 0);
  fill(a, 0, 8192, 1);
  fill(a, 8192, 4096, 2);
  ASSERT_EQ(post_send(a, 0, 8192, 1), 0);  // over macOS 26.2's 4 KiB: lost, and the sender cannot tell
  ASSERT_EQ(post_send(a, 8192, 4096, 2), 0);
  const auto sent = poll(a, 2, 5);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS);
  const auto got = poll(b, 1, 5);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].byte_len, 4096u);
  EXPECT_TRUE(same(a, 8192, b, 0, 4096));
}

TEST_F(Pair, ASendThatFindsNoPostedReceiveIsDroppedSilently) {
  ASSERT_EQ(connect(a, b), 0);
  ASSERT_EQ(connect(b, a), 0);
  fill(a, 0, 2048, 5);
  fill(a, 2048, 2048, 6);
  ASSERT_EQ(post_send(a, 0, 2048, 1), 0);
  ASSERT_EQ(poll(a, 1, 5).size(), 1u);
  EXPECT_TRUE(poll(b, 1, 0.2).empty());
  ASSERT_EQ(post_recv(b, 0, 4096, 9), 0);
  ASSERT_EQ(post_send(a, 2048, 2048, 2), 0);
  const auto got = poll(b, 1, 5);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(same(a, 2048, b, 0, 2048));  // the second frame, not the dropped first
}

TEST_F(Pair, MismatchedPathMtusLoseMultiPacketFramesButNotSinglePacketOnes) {
  ASSERT_EQ(connect(a, b, IBV_MTU_1024), 0);
  ASSERT_EQ(connect(b, a, IBV_MTU_2048), 0);
  ASSERT_EQ(post_recv(b, 0, 4096, 1), 0);
  fill(a, 0, 4096, 8);
  ASSERT_EQ(post_send(a, 0, 4096, 1), 0);
  EXPECT_TRUE(poll(b, 1, 0.2).empty());
  ASSERT_EQ(post_send(a, 0, 512, 2), 0);
  const auto got = poll(b, 1, 5);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].byte_len, 512u);
}

}  // namespace
}  // namespace softrdma_test
