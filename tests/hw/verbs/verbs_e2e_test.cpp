// The engine's collectives and the tiny model over VerbsRuntime, ranks as
// processes on this machine all using one device, compared bit for bit with
// the same collectives over TCP. verbs_e2e_tests is linked against softrdma
// (hw/softrdma) in place of libibverbs, so in CI the device is rdma_lo with
// macOS's rules: UC only, frames up to 512 KiB. MESHINFER_VERBS_DEVICE picks
// another device.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <thread>
#include <tuple>

#include "engine/checkpoint/random_model.hpp"
#include "hw/verbs/verbs_runtime.hpp"
#include "support/cli_runner.hpp"
#include "support/collective_suite.hpp"
#include "support/cpu_engine.hpp"
#include "support/detour_exercise.hpp"
#include "support/skip.hpp"
#include "support/tcp_cluster.hpp"

namespace {

// The device to use, or empty when this machine has none.
std::string rdma_device() {
  if (const char* chosen = std::getenv("MESHINFER_VERBS_DEVICE")) return chosen;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  const std::string name = list && n > 0 ? ibv_get_device_name(list[0]) : "";
  if (list) ibv_free_device_list(list);
  return name;
}

constexpr const char* kNoDevice =
    "no RDMA device: ibv_get_device_list returned none (Linux: load rdma_rxe and run "
    "`rdma link add rxe0 type rxe netdev IFACE`; macOS: enable RDMA in recovery mode)";

using Case = std::tuple<int, hw::QpType, std::size_t>;  // ranks, queue pair type, frame stride

class VerbsEndToEnd : public testing::TestWithParam<Case> {};

// `work` on every rank of a VerbsRuntime world on `device`, shaped by `c`,
// each rank a process with a TCP side channel; `before_open(rank)` runs in the
// rank's process before its device opens.
template <typename Work>
auto run_over_verbs(const std::string& device, const Case& c, Work work,
                    const std::function<void(int rank)>& before_open = nullptr) {
  const int n = std::get<0>(c);
  return testsupport::run_tcp_cluster(
      n,
      [&](engine::Runtime& side) {
        if (before_open) before_open(side.rank());
        hw::VerbsOptions o;
        o.devices.assign(n, device);
        o.devices[side.rank()].reset();
        o.qp_type = std::get<1>(c);
        o.frame_bytes = std::get<2>(c);
        hw::VerbsRuntime rt(side.rank(), n, o, side);
        return work(rt);
      },
      120);
}

TEST_P(VerbsEndToEnd, CollectivesMatchTcpBitForBit) {
  const std::string device = rdma_device();
  if (device.empty()) SKIP_UNLESS_CI_PROVIDES(true, kNoDevice);  // CI links softrdma: rdma_lo
  const int n = std::get<0>(GetParam());
  const std::uint64_t elements = (1u << 18) + 3;  // 1 MiB and a ragged tail

  const auto over_verbs = run_over_verbs(
      device, GetParam(), [&](engine::Runtime& rt) { return testsupport::run_collective_suite(rt, elements); });
  const auto over_tcp = testsupport::run_tcp_cluster(
      n, [&](engine::Runtime& rt) { return testsupport::run_collective_suite(rt, elements); }, 120);
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(over_verbs[r].ok) << "rank " << r << " over verbs: " << over_verbs[r].output;
    ASSERT_TRUE(over_tcp[r].ok) << "rank " << r << " over TCP: " << over_tcp[r].output;
    EXPECT_EQ(over_verbs[r].output, over_tcp[r].output) << "rank " << r;
  }
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const auto [n, type, stride] = info.param;
  return "n" + std::to_string(n) + (type == hw::QpType::kUC ? "_UC_" : "_RC_") + std::to_string(stride / 1024) + "KiB";
}

INSTANTIATE_TEST_SUITE_P(Worlds, VerbsEndToEnd,
                         testing::Values(Case{2, hw::QpType::kUC, 4096}, Case{4, hw::QpType::kUC, 4096},
                                         Case{2, hw::QpType::kUC, 512 * 1024}, Case{4, hw::QpType::kUC, 512 * 1024}),
                         case_name);

// The tiny model in tensor parallel: the same greedy token ids over
// verbs as over TCP (itself checked against one rank in cpu_tokens_test).
TEST_P(VerbsEndToEnd, TinyModelTokensMatchTcp) {
  const std::string device = rdma_device();
  if (device.empty()) SKIP_UNLESS_CI_PROVIDES(true, kNoDevice);  // CI links softrdma: rdma_lo
  const int n = std::get<0>(GetParam());
  const std::string dir = testsupport::fresh_dir("verbs-tiny-model");
  engine::write_random_model(dir, engine::tiny_model_config(), 42);
  const engine::Scenario s = testsupport::cpu_scenario(dir, n, 3, 11, 6, 2, 5);
  const auto over_verbs = run_over_verbs(device, GetParam(), [&](engine::Runtime& rt) {
    return testsupport::output_ids(testsupport::run_cpu_engine(rt, s, engine::Strategy::kTensor));
  });
  const auto over_tcp = testsupport::run_tcp_cluster(
      n,
      [&](engine::Runtime& rt) {
        return testsupport::output_ids(testsupport::run_cpu_engine(rt, s, engine::Strategy::kTensor));
      },
      120);
  ASSERT_TRUE(over_verbs[0].ok) << over_verbs[0].output;
  ASSERT_TRUE(over_tcp[0].ok) << over_tcp[0].output;
  EXPECT_FALSE(over_tcp[0].output.empty());
  EXPECT_EQ(over_verbs[0].output, over_tcp[0].output);
}

// The `reroute` policy over RDMA: the relay forwards on its own queue pairs,
// whole and in order (support/detour_exercise.hpp).
TEST(VerbsDetour, ADetourCarriesEveryMessageInOrderThroughTheRelay) {
  const std::string device = rdma_device();
  if (device.empty()) SKIP_UNLESS_CI_PROVIDES(true, kNoDevice);  // CI links softrdma: rdma_lo
  const auto results = run_over_verbs(device, Case{3, hw::QpType::kUC, 4096}, testsupport::exercise_detour);
  EXPECT_EQ(results[0].output, "answered");
  EXPECT_EQ(results[1].output, "relayed");
  EXPECT_EQ(results[2].output, "all");
}

// UC resends nothing: a message lost at the end of a burst, with nothing
// after it, is found when the waiting receiver asks its peer for a frame and
// the answer shows the gap, not when the receive times out. Rank 1's device
// loses everything it sends while its SOFTRDMA_FAULT_FILE says so (softrdma
// reads the file every 100 ms).
TEST(VerbsLoss, AMessageLostWithNothingAfterItIsFoundByAskingNotByTimingOut) {
  const std::string device = rdma_device();
  if (device.empty()) SKIP_UNLESS_CI_PROVIDES(true, kNoDevice);  // CI links softrdma: rdma_lo
  const std::string faults = testsupport::fresh_dir("verbs-ask") + "/rank1-faults";
  const auto losing = [&](bool all) {
    std::ofstream(faults) << (all ? "* 1 0\n" : "* 0 0\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  };
  const auto rank1_reads_faults = [&](int rank) {
    if (rank == 1) setenv("SOFTRDMA_FAULT_FILE", faults.c_str(), 1);
  };
  const auto work = [&](engine::Runtime& rt) -> std::string {
    if (rt.rank() == 1) {
      losing(true);
      rt.send(0, 7, engine::Payload::of(std::vector<std::byte>(100)));
      losing(false);
      rt.sleep_for(5);  // answers rank 0's asks meanwhile
      return "sent";
    }
    try {
      rt.recv(1, 7, 20);
      return "received what was lost";
    } catch (const engine::PeerFailure& e) {
      return e.what();
    } catch (const engine::Timeout& e) {
      return std::string("timed out: ") + e.what();
    }
  };
  const auto result = run_over_verbs(device, Case{2, hw::QpType::kUC, 4096}, work, rank1_reads_faults);
  ASSERT_TRUE(result[0].ok) << result[0].output;
  EXPECT_NE(result[0].output.find("a frame was lost"), std::string::npos) << result[0].output;
}

// Bytes that say where they belong: message `index` from `src` to `dst`.
engine::Payload stamped(int src, int dst, int index, std::size_t size) {
  engine::Bytes bytes(size);
  std::uint32_t x = 2654435761u * static_cast<std::uint32_t>(src * 977 + dst * 131 + index + 1);
  for (std::size_t i = 0; i < size; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    bytes[i] = static_cast<std::byte>(x);
  }
  return engine::Payload{size, std::move(bytes)};
}

// Checks `count` messages of `size` bytes from `src` with `tag`.
std::string check_stream(engine::Runtime& rt, int src, int tag, std::size_t size, int count) {
  for (int i = 0; i < count; ++i)
    if (rt.recv(src, tag, 60).bytes != stamped(src, rt.rank(), i, size).bytes)
      return fmt::format("message {} of {} bytes from rank {} differs", i, size, src);
  return "ok";
}

// Every other rank streams `count` messages of `size` bytes to rank 0; then
// rank 0 streams as many to each of them and waits for each to answer, which
// it does once it has checked every byte, closing at once. That last wait is
// where a 1 MiB stream lost its answer: the side channel's close was taken
// for the peer's death while the answer was still on its way over verbs.
std::string exchange(engine::Runtime& rt, std::size_t size, int count) {
  const int me = rt.rank(), n = rt.world();
  if (me != 0) {
    for (int i = 0; i < count; ++i) rt.send(0, 10, stamped(me, 0, i, size));
    const std::string got = check_stream(rt, 0, 12, size, count);
    rt.send(0, 11, stamped(me, 0, count, 8));
    return got;
  }
  for (int src = 1; src < n; ++src)
    if (const std::string got = check_stream(rt, src, 10, size, count); got != "ok") return got;
  for (int i = 0; i < count; ++i)
    for (int dst = 1; dst < n; ++dst) rt.send(dst, 12, stamped(0, dst, i, size));
  for (int src = 1; src < n; ++src)
    if (rt.recv(src, 11, 60).bytes != stamped(src, 0, count, 8).bytes) return "answer differs";
  return "ok";
}

using Stream = std::tuple<int, std::size_t, int, int>;  // ranks, message bytes, messages each way, runs

class VerbsStreams : public testing::TestWithParam<Stream> {};

TEST_P(VerbsStreams, EveryByteArrivesAndTheLastWordToo) {
  const std::string device = rdma_device();
  if (device.empty()) SKIP_UNLESS_CI_PROVIDES(true, kNoDevice);  // CI links softrdma: rdma_lo
  const auto [ranks, size, count, runs] = GetParam();
  for (int run = 0; run < runs; ++run) {
    const auto results = run_over_verbs(device, Case{ranks, hw::QpType::kUC, 4096},
                                        [&](engine::Runtime& rt) { return exchange(rt, size, count); });
    for (int r = 0; r < ranks; ++r) ASSERT_EQ(results[r].output, "ok") << "run " << run << ", rank " << r;
  }
}

std::string stream_name(const testing::TestParamInfo<Stream>& info) {
  const auto [ranks, size, count, runs] = info.param;
  return fmt::format("n{}_{}MiB_x{}", ranks, size >> 20, count);
}

INSTANTIATE_TEST_SUITE_P(Sizes, VerbsStreams,
                         testing::Values(Stream{2, 1 << 20, 64, 4}, Stream{4, 1 << 20, 8, 3}, Stream{2, 64 << 20, 2, 1},
                                         Stream{4, 64 << 20, 1, 1}),
                         stream_name);

// Frames lost at random (softrdma's loss switch, 1 in 200 packets): a loss is
// found as a gap and fails that peer; a message either arrives whole and
// right or not at all, and nothing waits past its bound.
TEST(VerbsLoss, ALostFrameFailsThePeerNeverHangsAndNeverDeliversWrongBytes) {
  const std::string device = rdma_device();
  if (device.empty()) SKIP_UNLESS_CI_PROVIDES(true, kNoDevice);  // CI links softrdma: rdma_lo
  const auto lossy = [](int) { setenv("SOFTRDMA_LOSS", "0.005", 1); };
  const auto start = std::chrono::steady_clock::now();
  const auto results = run_over_verbs(
      device, Case{2, hw::QpType::kUC, 4096},
      [](engine::Runtime& rt) -> std::string {
        try {
          return exchange(rt, 1 << 20, 16);
        } catch (const engine::PeerFailure& e) {
          return e.what();
        }
      },
      lossy);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 30);
  bool lost = false;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.output;
    EXPECT_EQ(r.output.find("differs"), std::string::npos) << r.output;
    lost |= r.output.find("a frame was lost") != std::string::npos;
  }
  EXPECT_TRUE(lost) << results[0].output << " / " << results[1].output;  // 16 MiB cannot all cross at that rate
}

}  // namespace
