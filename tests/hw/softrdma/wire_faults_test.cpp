// SOFTRDMA_LOSS and SOFTRDMA_REORDER, read when a context opens, and
// SOFTRDMA_FAULT_FILE, read while it runs: packets lost or held back one place,
// and UC's answer to both: a message arrives whole or not at all, and
// single-packet messages may land in each other's receives.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "softrdma_fixture.hpp"
#include "support/cli_runner.hpp"

namespace softrdma_test {
namespace {

class WireFaults : public testing::Test {
 protected:
  // Opens both ends with `name`=`value` in the environment and connects them.
  void open_with(const char* name, const char* value) {
    setenv(name, value, 1);
    setenv("SOFTRDMA_SEED", "7", 1);
    open_end(a);
    open_end(b);
    unsetenv(name);
    unsetenv("SOFTRDMA_SEED");
    ASSERT_EQ(connect(a, b), 0);
    ASSERT_EQ(connect(b, a), 0);
  }
  // Message k: `bytes` bytes of value k + 1 at a's offset k * bytes, into b's receive k.
  void send_messages(int n, std::size_t bytes) {
    for (int k = 0; k < n; ++k) {
      std::memset(a.buf.data() + k * bytes, k + 1, bytes);
      ASSERT_EQ(post_recv(b, k * bytes, bytes, k), 0);
    }
    for (int k = 0; k < n; ++k) ASSERT_EQ(post_send(a, k * bytes, bytes, k), 0);
    ASSERT_EQ(poll(a, n, 5).size(), static_cast<std::size_t>(n));
  }
  // The message number b's receive `k` holds (0 when it holds none whole).
  int held_in(int k, std::size_t bytes) const {
    const auto first = static_cast<unsigned char>(b.buf[k * bytes]);
    for (std::size_t i = 0; i < bytes; ++i)
      if (static_cast<unsigned char>(b.buf[k * bytes + i]) != first) return 0;
    return first;
  }
  void TearDown() override {
    close_end(a);
    close_end(b);
  }
  End a, b;
};

TEST_F(WireFaults, UnderReorderingSinglePacketMessagesLandInEachOthersReceives) {
  open_with("SOFTRDMA_REORDER", "1");
  send_messages(4, 256);
  ASSERT_EQ(poll(b, 4, 5).size(), 4u);
  EXPECT_EQ(held_in(0, 256), 2);  // every other packet waits for the next one
  EXPECT_EQ(held_in(1, 256), 1);
  EXPECT_EQ(held_in(2, 256), 4);
  EXPECT_EQ(held_in(3, 256), 3);
}

TEST_F(WireFaults, UnderReorderingAMultiPacketMessageIsLostWholeNeverAltered) {
  open_with("SOFTRDMA_REORDER", "1");
  send_messages(1, 4096);  // four packets at MTU 1024, sent 2 1 4 3
  EXPECT_TRUE(poll(b, 1, 0.5).empty());
  EXPECT_EQ(held_in(0, 4096), 0);
}

TEST_F(WireFaults, LossDropsSomeMessagesAndDeliversTheRestWholeAndInOrder) {
  open_with("SOFTRDMA_LOSS", "0.5");
  send_messages(40, 1024);
  const auto got = poll(b, 40, 1);
  EXPECT_GT(got.size(), 0u);
  EXPECT_LT(got.size(), 40u);
  int last = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].status, IBV_WC_SUCCESS);
    const int message = held_in(static_cast<int>(k), 1024);
    EXPECT_GT(message, last) << "receive " << k;
    last = message;
  }
}

// As `launch` carries out a scenario's rdma-packet-loss: the file's line for
// this device's address beats the line "*", and a change reaches running contexts.
TEST_F(WireFaults, TheFaultFileTurnsLossOnAndOffWhileTheProcessRunsPerDeviceAddress) {
  const std::string file = testsupport::fresh_dir("softrdma-fault-file") + "/faults";
  setenv("SOFTRDMA_FAULT_FILE", file.c_str(), 1);
  const auto write_then_wait = [&](const std::string& text) {
    std::ofstream(file) << text;
    std::this_thread::sleep_for(std::chrono::seconds(1));  // the receiver threads read it every 100 ms
  };
  open_with("SOFTRDMA_SEED", "7");
  write_then_wait("127.0.0.2 0 0\n* 1 0\n");  // not rdma_lo's line: "*" holds
  send_messages(4, 256);
  EXPECT_TRUE(poll(b, 4, 0.5).empty()) << "every packet lost";
  write_then_wait("127.0.0.1 0 0\n* 1 0\n");
  send_messages(4, 256);
  EXPECT_EQ(poll(b, 4, 5).size(), 4u) << "none lost";
  for (int k = 0; k < 4; ++k) EXPECT_EQ(held_in(k, 256), k + 1);
  unsetenv("SOFTRDMA_FAULT_FILE");
}

TEST(WireFaultsSetting, AMalformedRateOpensNoContext) {
  setenv("SOFTRDMA_LOSS", "2", 1);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_GT(n, 0);
  errno = 0;
  EXPECT_EQ(ibv_open_device(list[0]), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_free_device_list(list);
  unsetenv("SOFTRDMA_LOSS");
}

}  // namespace
}  // namespace softrdma_test
