// The failure switch behaves as macOS's RDMA stack failure: every queue pair
// fails, the device disappears, and it stays so for the life of the process.
// Each case runs in a forked child, since the failure cannot be undone.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "softrdma_fixture.hpp"

namespace softrdma_test {
namespace {

TEST(StackFailure, FailsEveryQueuePairPostsDeviceFatalAndHidesTheDevice) {
  const std::string flag = testing::TempDir() + "softrdma-fail-" + std::to_string(getpid());
  std::remove(flag.c_str());
  const int code = in_child([&] {
    setenv("SOFTRDMA_FAIL_FILE", flag.c_str(), 1);
    End a, b;
    open_end(a);
    open_end(b);
    if (connect(a, b) || connect(b, a) || post_recv(b, 0, 4096, 5)) return 1;
    if (std::FILE* f = std::fopen(flag.c_str(), "w")) std::fclose(f);
    const auto flushed = poll(b, 1, 5);  // the receiver notices within its check interval
    if (flushed.size() != 1 || flushed[0].status != IBV_WC_WR_FLUSH_ERR || flushed[0].wr_id != 5) return 2;
    ibv_async_event event{};
    if (ibv_get_async_event(b.ctx, &event) != 0 || event.event_type != IBV_EVENT_DEVICE_FATAL) return 3;
    ibv_ack_async_event(&event);
    if (post_send(a, 0, 64, 1) == 0) return 4;  // a's QP failed too
    std::remove(flag.c_str());                  // only a restart brings it back
    int n = -1;
    ibv_device** list = ibv_get_device_list(&n);
    ibv_free_device_list(list);
    if (n != 0) return 5;
    close_end(a);
    close_end(b);
    return 0;
  });
  std::remove(flag.c_str());
  EXPECT_EQ(code, 0) << "1 setup, 2 no flush, 3 no DEVICE_FATAL, 4 send still taken, 5 device still listed";
}

}  // namespace
}  // namespace softrdma_test
