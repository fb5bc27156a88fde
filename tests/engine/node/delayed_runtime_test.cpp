// The latency a degraded cable adds, held in the sending rank: on a clock the
// test drives, what reaches the wire when, and in which order.
#include "engine/node/delayed_runtime.hpp"

#include <gtest/gtest.h>

#include <tuple>

#include "engine/base/error.hpp"

namespace {

using engine::Payload;

// A runtime on a scripted clock: sleeping and waiting advance it; sends are recorded.
class WireLog : public engine::Runtime {
 public:
  std::vector<std::tuple<double, int, int>> sent;  // (time, destination, tag)
  int dead = -1;                                   // sends to it fail
  double t = 0;

  int rank() const override { return 0; }
  int world() const override { return 4; }
  double now() const override { return t; }
  void sleep_for(double s) override { t += s; }
  void send(int dst, int tag, Payload) override {
    if (dst == dead) throw engine::PeerFailure(dst, "gone");
    sent.emplace_back(t, dst, tag);
  }
  Payload recv(int src, int tag, double timeout_s) override {  // nothing ever arrives
    t += timeout_s;
    throw engine::Timeout(src, tag, timeout_s);
  }
};

TEST(DelayedRuntime, MessagesToTheDegradedPeerLeaveTheLatencyLaterAndOthersAtOnce) {
  WireLog wire;
  wire.t = 1;
  engine::DelayedRuntime rt(wire, {{1, 1, 3, 0.05}});
  rt.send(1, 10, Payload{});
  rt.send(2, 20, Payload{});
  rt.sleep_for(0.01);
  rt.send(1, 11, Payload{});
  rt.sleep_for(0.1);
  const std::vector<std::tuple<double, int, int>> expected{{1, 2, 20}, {1.05, 1, 10}, {1.06, 1, 11}};
  ASSERT_EQ(wire.sent.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(std::get<0>(wire.sent[i]), std::get<0>(expected[i]), 1e-9) << i;
    EXPECT_EQ(std::get<1>(wire.sent[i]), std::get<1>(expected[i])) << i;
    EXPECT_EQ(std::get<2>(wire.sent[i]), std::get<2>(expected[i])) << i;
  }
}

TEST(DelayedRuntime, AMessageSentAfterTheDegradeEndsStaysBehindTheOnesStillHeld) {
  WireLog wire;
  engine::DelayedRuntime rt(wire, {{1, 0, 1, 0.5}});
  wire.t = 0.9;
  rt.send(1, 10, Payload{});  // due at 1.4
  wire.t = 1.0;
  rt.send(1, 11, Payload{});  // no latency any more, but not before tag 10
  EXPECT_TRUE(wire.sent.empty());
  // Waiting for another peer hands them on when due.
  EXPECT_THROW(rt.recv(3, 7, 1.0), engine::Timeout);
  ASSERT_EQ(wire.sent.size(), 2u);
  EXPECT_NEAR(std::get<0>(wire.sent[0]), 1.4, 1e-9);
  EXPECT_EQ(std::get<2>(wire.sent[0]), 10);
  EXPECT_EQ(std::get<2>(wire.sent[1]), 11);
  EXPECT_NEAR(wire.t, 2.0, 1e-9);  // the whole timeout was waited
}

TEST(DelayedRuntime, APeerThatFailedWhileAMessageWaitedFailsTheNextSend) {
  WireLog wire;
  wire.dead = 1;
  engine::DelayedRuntime rt(wire, {{1, 0, 10, 0.5}});
  rt.send(1, 10, Payload{});
  rt.sleep_for(1);
  EXPECT_THROW(rt.send(1, 11, Payload{}), engine::PeerFailure);
}

TEST(DelayedRuntime, ALinkDegradeAddsItsLatencyToBothEndsOfItsCableOnly) {
  engine::Scenario s;
  engine::FaultSpec f;
  f.kind = engine::FaultKind::kLinkDegrade;
  f.node = 0;
  f.peer = 2;
  f.at_s = 1;
  f.duration_s = 2;
  f.added_latency_s = 0.02;
  s.faults = {f};
  const auto at0 = engine::added_latencies(s, 0), at2 = engine::added_latencies(s, 2);
  ASSERT_EQ(at0.size(), 1u);
  ASSERT_EQ(at2.size(), 1u);
  EXPECT_EQ(at0[0].peer, 2);
  EXPECT_EQ(at2[0].peer, 0);
  EXPECT_EQ(at0[0].from_s, 1);
  EXPECT_EQ(at0[0].until_s, 3);
  EXPECT_EQ(at0[0].latency_s, 0.02);
  EXPECT_TRUE(engine::added_latencies(s, 1).empty());
}

}  // namespace
