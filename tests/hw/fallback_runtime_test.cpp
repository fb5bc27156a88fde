// FallbackRuntime on two real TCP networks (two loopback bootstraps): a
// message sent on the network a rank is not on yet, or has left, still
// arrives, and once moved a failure of the old network is no failure.
#include "hw/fallback_runtime.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>

#include "engine/base/error.hpp"
#include "hw/socket_util.hpp"
#include "hw/tcp_runtime.hpp"
#include "support/tcp_cluster.hpp"

namespace {

constexpr int kBefore = 1, kDecision = 2, kAfter = 3;

std::string text(const engine::Payload& p) { return {reinterpret_cast<const char*>(p.bytes.data()), p.bytes.size()}; }
engine::Payload of(const std::string& s) { return engine::Payload::of(std::as_bytes(std::span(s))); }

// `primary` and a second TcpRuntime of its rank, whose rank 0 listens on `second_fd`.
std::unique_ptr<hw::FallbackRuntime> on_two_networks(engine::Runtime& primary, int second_fd, int second_port) {
  hw::TcpOptions o;
  o.coordinator_port = second_port;
  o.coordinator_listen_fd = primary.rank() == 0 ? second_fd : -1;
  return std::make_unique<hw::FallbackRuntime>(std::make_unique<engine::ForwardingRuntime>(primary),
                                               std::make_unique<hw::TcpRuntime>(primary.rank(), primary.world(), o));
}

// Rank 0 moves first and tells the others on the secondary network, as the
// coordinator does; rank 1 sent rank 0 a message on the primary before that.
// Rank 2's primary connection to rank 1 then fails: rank 1's next message,
// on the secondary, still arrives.
TEST(FallbackRuntime, MessagesArriveFromEitherNetworkAndTheOldOneMayFail) {
  const int second_fd = hw::listen_on("127.0.0.1", 0), second_port = hw::local_port(second_fd);
  const auto results = testsupport::run_tcp_cluster(3, [&](engine::Runtime& primary) -> std::string {
    const int me = primary.rank();
    const auto networks = on_two_networks(primary, second_fd, second_port);
    hw::FallbackRuntime& rt = *networks;
    if (me == 0) {
      rt.use_secondary_network();
      for (int r : {1, 2}) rt.send(r, kDecision, of("move"));
      return text(rt.recv(1, kBefore, 30)) + "," + text(rt.recv(2, kAfter, 30));
    }
    if (me == 1) rt.send(0, kBefore, of("sent on the primary"));
    if (text(rt.recv(0, kDecision, 30)) != "move") return "no decision";
    rt.use_secondary_network();
    if (me == 1) {
      rt.sleep_for(0.1);  // rank 2 meanwhile looks at its failed primary too, slice after slice
      rt.send(2, kAfter, of("from 1"));
      return "moved";
    }
    primary.give_up(1, "cable dead");  // rank 2's primary loses rank 1
    const std::string got = text(rt.recv(1, kAfter, 30));
    rt.send(0, kAfter, of("2 heard " + got));
    return got;
  });
  ::close(second_fd);
  EXPECT_EQ(results[0].output, "sent on the primary,2 heard from 1");
  EXPECT_EQ(results[1].output, "moved");
  EXPECT_EQ(results[2].output, "from 1");
}

// Before the move, the primary's failures are the rank's: a peer lost there is lost.
TEST(FallbackRuntime, APeerLostOnThePrimaryBeforeTheMoveIsAFailure) {
  const int second_fd = hw::listen_on("127.0.0.1", 0), second_port = hw::local_port(second_fd);
  const auto results = testsupport::run_tcp_cluster(2, [&](engine::Runtime& primary) -> std::string {
    const auto networks = on_two_networks(primary, second_fd, second_port);
    hw::FallbackRuntime& rt = *networks;
    if (primary.rank() == 1) return "idle";
    primary.give_up(1, "cable dead");
    try {
      rt.recv(1, kBefore, 1);
    } catch (const engine::PeerFailure& e) {
      return e.what();
    }
    return "no failure";
  });
  ::close(second_fd);
  EXPECT_NE(results[0].output.find("cable dead"), std::string::npos) << results[0].output;
}

}  // namespace
