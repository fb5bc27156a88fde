// TcpRuntime on the wire: a length from a peer is bounded before anything is
// allocated, a malformed frame fails only the peer that sent it, frames that
// arrive together are each delivered whole, a rank that closes while its
// peer is still writing loses none of what it sent, and a relay notices the
// crash of a peer it holds back.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "engine/base/error.hpp"
#include "hw/handshake.hpp"
#include "hw/socket_util.hpp"
#include "hw/tcp_frame.hpp"
#include "hw/tcp_runtime.hpp"
#include "support/detour_exercise.hpp"
#include "support/tcp_cluster.hpp"

namespace {

constexpr int kTag = 7, kChatter = 8;

engine::Payload pattern(std::size_t n) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>(i * 131 % 251);
  return engine::Payload::of(bytes);
}

constexpr int kWorld = 4;

TEST(TcpFrame, ALengthOverTheLimitIsRefusedBeforeAnythingIsAllocated) {
  engine::Payload huge = engine::Payload::sized(std::uint64_t{1} << 63);
  const auto header = hw::encode_tcp_header(kTag, huge);
  EXPECT_THROW(hw::decode_tcp_header(header, hw::kMaxMessageBytes, kWorld), hw::FrameError);
  const hw::TcpFrameHeader ok = hw::decode_tcp_header(hw::encode_tcp_header(kTag, pattern(10)), 10, kWorld);
  EXPECT_EQ(ok.tag, kTag);
  EXPECT_EQ(ok.size, 10u);
  EXPECT_TRUE(ok.has_bytes);
  EXPECT_EQ(ok.route.forward_to, -1);
  EXPECT_EQ(ok.route.relayed_from, -1);
  auto flagged = hw::encode_tcp_header(kTag, pattern(10));
  flagged[5] = 1;  // a flag bit no build sets
  EXPECT_THROW(hw::decode_tcp_header(flagged, 10, kWorld), hw::FrameError);
}

TEST(TcpFrame, ADetourNamesARankOfTheCluster) {
  const hw::TcpFrameHeader to =
      hw::decode_tcp_header(hw::encode_tcp_header(kTag, pattern(10), {.forward_to = 3}), 10, kWorld);
  EXPECT_EQ(to.route.forward_to, 3);
  EXPECT_EQ(to.route.relayed_from, -1);
  const hw::TcpFrameHeader from =
      hw::decode_tcp_header(hw::encode_tcp_header(kTag, pattern(10), {.relayed_from = 0}), 10, kWorld);
  EXPECT_EQ(from.route.relayed_from, 0);
  EXPECT_EQ(from.route.forward_to, -1);
  EXPECT_THROW(hw::decode_tcp_header(hw::encode_tcp_header(kTag, pattern(10), {.forward_to = kWorld}), 10, kWorld),
               hw::FrameError);
  auto both = hw::encode_tcp_header(kTag, pattern(10), {.forward_to = 1});
  both[4] |= 4;  // forwarded and to forward at once
  EXPECT_THROW(hw::decode_tcp_header(both, 10, kWorld), hw::FrameError);
}

TEST(Hello, OnlyAWellFormedHelloDecodes) {
  const hw::Hello me{3, 40000, "10.0.12.1"};
  const std::vector<char> good = hw::encode_hello(me);
  const hw::Hello back = hw::decode_hello(good.data());
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.port, 40000);
  EXPECT_EQ(back.host, "10.0.12.1");
  std::vector<char> bad = good;
  bad[0] = 'G';
  EXPECT_THROW(hw::decode_hello(bad.data()), std::invalid_argument);
  bad = good;
  std::fill(bad.begin() + 16, bad.end(), 'x');  // no terminating NUL
  EXPECT_THROW(hw::decode_hello(bad.data()), std::invalid_argument);
  bad = good;
  bad[14] = 1;  // port 65536 and more
  EXPECT_THROW(hw::decode_hello(bad.data()), std::invalid_argument);
}

// Rank 0 accepts at most 1 MiB; rank 1 sends it 2 MiB. Rank 1 is failed with
// the reason, and rank 2 goes on talking to rank 0 as before.
TEST(TcpWire, AnOversizedFrameFailsOnlyThePeerThatSentIt) {
  const auto results = testsupport::run_tcp_cluster(
      3,
      [](engine::Runtime& rt) -> std::string {
        if (rt.rank() != 0) {
          rt.send(0, kTag, pattern(rt.rank() == 1 ? 2 << 20 : 1000));
          return rt.rank() == 2 && rt.recv(0, kTag, 30).size == 5 ? "answered" : "";
        }
        if (rt.recv(2, kTag, 30).bytes != pattern(1000).bytes) return "rank 2's message corrupt";
        std::string failure = "rank 1 not failed";
        try {
          rt.recv(1, kTag, 30);
        } catch (const engine::PeerFailure& e) {
          failure = e.what();
        }
        rt.send(2, kTag, engine::Payload::sized(5));
        return failure;
      },
      [](int rank, hw::TcpOptions& o) {
        if (rank == 0) o.max_message_bytes = 1 << 20;
      });
  ASSERT_TRUE(results[0].ok) << results[0].output;
  EXPECT_NE(results[0].output.find("peer 1 failed"), std::string::npos) << results[0].output;
  EXPECT_NE(results[0].output.find("malformed frame: frame claims a 2097152-byte message, over the 1048576-byte limit"),
            std::string::npos)
      << results[0].output;
  EXPECT_EQ(results[2].output, "answered");
}

// Rank 1 sends its final report and closes while rank 0 is still writing to
// it and has not read yet: rank 0 still reads every byte of the report.
TEST(TcpWire, AFinalReportSentWhileThePeerIsStillWritingArrivesWhole) {
  constexpr std::size_t kReportBytes = 8 << 20;
  const auto results = testsupport::run_tcp_cluster(2, [](engine::Runtime& rt) -> std::string {
    if (rt.rank() == 1) {
      rt.send(0, kTag, pattern(kReportBytes));
      return "sent";  // the runtime closes now, with rank 0's writes still arriving
    }
    // A second of writing (send() does not read), then the report.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (std::chrono::steady_clock::now() < until) {
      rt.send(1, kChatter, pattern(64 << 10));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return rt.recv(1, kTag, 30).bytes == pattern(kReportBytes).bytes ? "whole" : "corrupt";
  });
  EXPECT_EQ(results[0].output, "whole");
  EXPECT_TRUE(results[1].ok) << results[1].output;
}

// Rank 0 may hold 1 MiB for rank 1, which reads nothing for a second: rank 0's
// sends wait instead of queueing 32 MiB (more than loopback's socket buffers
// hold), and every message still arrives, in order.
TEST(TcpWire, ASendQueueNeverGrowsPastItsLimitAndLosesNothing) {
  constexpr int kMessages = 128;
  constexpr std::size_t kBytes = 256 << 10, kLimit = 1 << 20;
  const auto results = testsupport::run_tcp_cluster(
      2,
      [](engine::Runtime& rt) -> std::string {
        if (rt.rank() == 1) {
          std::this_thread::sleep_for(std::chrono::seconds(1));  // no progress: nothing is read
          for (int i = 0; i < kMessages; ++i)
            if (rt.recv(0, kTag, 30).bytes != pattern(kBytes + i).bytes) return "message " + std::to_string(i);
          return "all";
        }
        auto& tcp = dynamic_cast<hw::TcpRuntime&>(rt);
        std::uint64_t most = 0;
        for (int i = 0; i < kMessages; ++i) {
          rt.send(1, kTag, pattern(kBytes + i));
          most = std::max(most, tcp.queued_bytes(1));
        }
        return std::to_string(most);
      },
      [](int rank, hw::TcpOptions& o) {
        if (rank == 0) o.max_queued_bytes = kLimit;
      });
  EXPECT_EQ(results[1].output, "all");
  ASSERT_TRUE(results[0].ok) << results[0].output;
  EXPECT_LE(std::stoull(results[0].output), kLimit);
  EXPECT_GT(std::stoull(results[0].output), 0u) << "the socket took everything: nothing was ever queued";
}

// The relay forwards in the transport, whole and in order (support/detour_exercise.hpp).
TEST(TcpWire, ADetourCarriesEveryMessageInOrderThroughTheRelay) {
  const auto results = testsupport::run_tcp_cluster(3, testsupport::exercise_detour);
  EXPECT_EQ(results[0].output, "answered");
  EXPECT_EQ(results[1].output, "relayed");
  EXPECT_EQ(results[2].output, "all");
}

// A relay whose onward peer reads nothing for two seconds keeps no more than
// its queue limit and one message for it: it stops reading from the sender,
// whose own backpressure then holds the rest. Nothing is lost or reordered.
TEST(TcpWire, ARelayKeepsNoMoreThanItsQueueLimitForAPeerThatDoesNotRead) {
  constexpr int kMessages = 32;
  constexpr std::uint64_t kLimit = 1 << 20, kMessage = 1 << 20;
  const auto results = testsupport::run_tcp_cluster(
      3,
      [&](engine::Runtime& rt) -> std::string {
        const int other = 2 - rt.rank();
        if (rt.rank() != 1 && !rt.route_via(other, 1)) return "no detour";
        if (rt.rank() == 0) {
          for (int i = 0; i < kMessages; ++i) rt.send(2, kTag, pattern(kMessage + i));
          return rt.recv(2, kChatter, 30).size == 1 ? "answered" : "answer corrupt";
        }
        if (rt.rank() == 2) {
          std::this_thread::sleep_for(std::chrono::seconds(2));  // no progress: nothing is read
          for (int i = 0; i < kMessages; ++i)
            if (rt.recv(0, kTag, 30).bytes != pattern(kMessage + i).bytes) return "message " + std::to_string(i);
          rt.send(0, kChatter, pattern(1));
          return "all";
        }
        std::uint64_t most = 0;
        for (int i = 0; i < 50; ++i) {
          rt.sleep_for(0.05);
          most = std::max(most, dynamic_cast<hw::TcpRuntime&>(rt).queued_bytes(2));
        }
        return most <= kLimit + kMessage + kMessages ? "bounded" : "held " + std::to_string(most) + " bytes";
      },
      [](int, hw::TcpOptions& o) { o.max_queued_bytes = kLimit; });
  EXPECT_EQ(results[0].output, "answered");
  EXPECT_EQ(results[1].output, "bounded");
  EXPECT_EQ(results[2].output, "all");
}

// Waits up to `timeout_s` for a byte on `fd`; 0 when none came.
char await_byte(int fd, double timeout_s) {
  char byte = 0;
  if (!hw::wait_fd(fd, POLLIN, hw::deadline_in(timeout_s)) || ::read(fd, &byte, 1) != 1) return 0;
  return byte;
}

// Rank 1 relays rank 0's messages to rank 2, which reads nothing, until it
// holds rank 0 back. Rank 0 then crashes, and rank 1's next message to it is
// answered by a reset. Rank 1 notices at once, though it reads nothing else
// from rank 0 while it holds it back: a receive from rank 0 is a PeerFailure,
// not a timeout spent polling a dead socket.
TEST(TcpWire, ARelayNoticesAPeerItHoldsBackCrash) {
  constexpr std::uint64_t kLimit = 1 << 20, kMessage = 1 << 20;
  int crashed[2], finished[2];  // rank 0 to rank 1; rank 1 to rank 2
  ASSERT_EQ(::pipe(crashed), 0);
  ASSERT_EQ(::pipe(finished), 0);
  const auto results = testsupport::run_tcp_cluster(
      3,
      [&](engine::Runtime& rt) -> std::string {
        if (rt.rank() == 0) {
          if (!rt.route_via(2, 1)) return "no detour";
          // Once what it sends stays queued, the relay has stopped reading it.
          for (int i = 0; i < 200; ++i) {
            rt.send(2, kTag, pattern(kMessage));
            rt.sleep_for(0.05);
            if (dynamic_cast<hw::TcpRuntime&>(rt).queued_bytes(1) > 0) {
              if (::write(crashed[1], "c", 1) != 1) return "pipe";
              ::_exit(0);  // the kernel closes its sockets, as in a crash
            }
          }
          if (::write(crashed[1], "n", 1) != 1) return "pipe";
          return "never held back";
        }
        if (rt.rank() == 2) return await_byte(finished[0], 120) ? "quiet" : "never told";
        char byte = 0;
        for (int i = 0; i < 2400 && !(byte = await_byte(crashed[0], 0)); ++i) rt.sleep_for(0.05);  // relaying
        std::string seen = "rank 0 was never held back";
        if (byte == 'c') {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));  // rank 0's process is gone
          rt.send(0, kChatter, pattern(1));
          try {
            rt.recv(0, kChatter, 5);
            seen = "a message from a crashed rank";
          } catch (const engine::PeerFailure&) {
            seen = "noticed";
          } catch (const engine::Timeout&) {
            seen = "timed out";
          }
        }
        if (::write(finished[1], "f", 1) != 1) return "pipe";
        return seen;
      },
      [](int, hw::TcpOptions& o) { o.max_queued_bytes = kLimit; });
  for (int fd : {crashed[0], crashed[1], finished[0], finished[1]}) ::close(fd);
  EXPECT_EQ(results[1].output, "noticed");
  EXPECT_EQ(results[2].output, "quiet");
}

// Rank 1 sends a burst of messages of every kind while rank 0 sleeps, so that
// they wait in its socket together: reads that take several frames at once, a
// frame cut at any byte, a payload larger than what one read stages, empty and
// size-only messages. Each arrives whole, in order.
TEST(TcpWire, MessagesThatArriveTogetherAreEachDeliveredWhole) {
  const std::vector<std::uint64_t> sizes = {0, 1, 23, 24, 25, 16 << 10, 65535, 65536, 65537, 200 << 10, 3, 1 << 20, 7};
  const auto expected = [](std::size_t i, std::uint64_t size) {
    return i % 3 == 2 ? engine::Payload::sized(size) : pattern(static_cast<std::size_t>(size));
  };
  const auto results = testsupport::run_tcp_cluster(2, [&](engine::Runtime& rt) -> std::string {
    if (rt.rank() == 1) {
      for (int round = 0; round < 3; ++round)
        for (std::size_t i = 0; i < sizes.size(); ++i) rt.send(0, kTag, expected(i, sizes[i]));
      return "sent";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int round = 0; round < 3; ++round)
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        const engine::Payload got = rt.recv(1, kTag, 30);
        const engine::Payload want = expected(i, sizes[i]);
        if (got.size != want.size || got.bytes != want.bytes)
          return fmt::format("round {} message {}: {} bytes", round, i, got.size);
      }
    return "all";
  });
  EXPECT_EQ(results[0].output, "all");
  EXPECT_TRUE(results[1].ok) << results[1].output;
}

// Rank 1 sends 3 MiB that rank 0 never asks for, past rank 0's 2 MiB: rank 1 is failed with the reason.
TEST(TcpWire, ASenderOfMoreThanMayWaitUnreadIsFailed) {
  const auto results = testsupport::run_tcp_cluster(
      2,
      [](engine::Runtime& rt) -> std::string {
        if (rt.rank() == 1) {
          for (int i = 0; i < 3; ++i) rt.send(0, kChatter, pattern(1 << 20));
          return "sent";
        }
        try {
          rt.recv(1, kTag, 30);
        } catch (const engine::PeerFailure& e) {
          return e.what();
        }
        return "not failed";
      },
      [](int rank, hw::TcpOptions& o) {
        if (rank == 0) o.max_unread_bytes = 2 << 20;
      });
  EXPECT_NE(results[0].output.find("peer 1 failed: sent more than the 2097152 bytes that may wait unread"),
            std::string::npos)
      << results[0].output;
}

}  // namespace
