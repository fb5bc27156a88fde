// What a node concludes from heartbeats and gossip, and the decisions it sends.
#include "engine/node/liveness.hpp"

#include <gtest/gtest.h>

#include <functional>

#include "engine/node/epoch_runtime.hpp"

namespace {

using engine::ControlMessage;
using engine::Liveness;

constexpr double kBeat = 0.05, kTimeout = 0.25;

// Node 0's view of four nodes, replayed up to `now`: from 0.2 s on, `dead` is silent and
// the cable between cut_a and cut_b is dead (both gossip the other as unheard).
void replay(Liveness& m, double now, int dead, int cut_a = -1, int cut_b = -1) {
  for (double t = 0; t <= now + 1e-9; t += kBeat) {
    m.beat(t);
    for (int p = 1; p < 4; ++p) {
      if (p == dead && t > 0.2) continue;
      std::vector<float> ages(4, static_cast<float>(kBeat));
      if (t > 0.2) {
        if (dead >= 0) ages[dead] = static_cast<float>(t - 0.2);
        if (p == cut_a) ages[cut_b] = static_cast<float>(t - 0.2);
        if (p == cut_b) ages[cut_a] = static_cast<float>(t - 0.2);
      }
      m.heard(p, t, 0, ages);
    }
  }
}

TEST(Liveness, ACrashedNodeIsDownWhileTheOthersAreHeard) {
  Liveness m(4, kBeat, kTimeout);
  replay(m, 0.6, 2);
  EXPECT_TRUE(m.suspected(2, 0.6));
  EXPECT_TRUE(m.down(2, 0.6, 0));
  EXPECT_FALSE(m.down(1, 0.6, 0));
}

TEST(Liveness, ANodeBehindADeadCableIsNotDown) {
  // Node 1 lost node 3 (their cable died), but node 0 and node 2 still hear it.
  Liveness m(4, kBeat, kTimeout);
  replay(m, 0.6, -1, 1, 3);
  EXPECT_FALSE(m.down(3, 0.6, 0));
  EXPECT_LT(m.staleness(3, 0.6), kTimeout / 2);
}

TEST(Liveness, GossipShowsANodeAliveThatThisNodeCannotHear) {
  // Node 0's own cable to node 3 died: only the gossip of 1 and 2 says 3 is alive.
  Liveness m(4, kBeat, kTimeout);
  for (double t = 0; t <= 0.6 + 1e-9; t += kBeat) {
    m.beat(t);
    for (int p = 1; p < 4; ++p)
      if (p != 3 || t <= 0.2) m.heard(p, t, 0, std::vector<float>(4, static_cast<float>(kBeat)));
  }
  EXPECT_TRUE(m.suspected(3, 0.6));
  EXPECT_FALSE(m.down(3, 0.6, 0));
}

TEST(Liveness, WhenNobodyIsHeardTheFabricFailedNotANode) {
  Liveness m(4, kBeat, kTimeout);
  for (double t = 0; t <= 1.0 + 1e-9; t += kBeat) {
    m.beat(t);
    if (t <= 0.2)
      for (int p = 1; p < 4; ++p) m.heard(p, t, 0, std::vector<float>(4, 0.0f));
  }
  for (int p = 1; p < 4; ++p) EXPECT_FALSE(m.down(p, 1.0, 0)) << p;
}

TEST(Liveness, ARelayedPeerGetsAFreshTimeout) {
  Liveness m(4, kBeat, kTimeout);
  replay(m, 0.6, -1);
  m.heard(3, 0.2, 0);  // node 0's own cable to node 3 died at 0.2
  m.beat(0.6);
  ASSERT_TRUE(m.suspected(3, 0.6));
  m.set_relay(3, 1, 0.6);
  EXPECT_EQ(m.relay(3), 1);
  EXPECT_FALSE(m.suspected(3, 0.6 + kTimeout / 2));
  EXPECT_TRUE(m.suspected(3, 0.6 + 2 * kTimeout));
}

// Node 0's view at `now` of members 0..3 in epoch 1: node 0 has waited since
// `since`, the others report how long they had waited at their last beat.
bool stalled_with(const std::vector<double>& waited, double since = 0.0, double now = 0.6, int epoch = 1) {
  Liveness m(4, kBeat, kTimeout);
  for (double t = 0; t <= now + 1e-9; t += kBeat) m.beat(t);
  for (int p = 1; p < 4; ++p) m.heard(p, now - kBeat, epoch, {}, waited[p - 1]);
  m.set_waiting_since(since);
  return m.stalled({0, 1, 2, 3}, 0, 1, now);
}

TEST(Liveness, EveryMemberWaitingOnAnotherPastTheTimeoutIsAStall) { EXPECT_TRUE(stalled_with({0.3, 0.4, 0.5})); }

TEST(Liveness, AMemberStillComputingOrWaitingBrieflyIsNoStall) {
  EXPECT_FALSE(stalled_with({0.3, -1, 0.5})) << "one computes: it will send";
  EXPECT_FALSE(stalled_with({0.3, kTimeout / 2, 0.5})) << "one has only just begun to wait";
  EXPECT_FALSE(stalled_with({0.3, 0.4, 0.5}, 0.5)) << "node 0 itself has only just begun to wait";
  EXPECT_FALSE(stalled_with({0.3, 0.4, 0.5}, -1)) << "node 0 does not wait";
}

// At the flow level an engine may be ahead of its heartbeats in simulated
// time: a wait it began after their `now` is a wait, of no time yet.
TEST(Liveness, AWaitThatBeganAfterNowHasWaitedNoTime) {
  Liveness m(2, kBeat, kTimeout);
  EXPECT_LT(m.waited(1.0), 0) << "not waiting";
  m.set_waiting_since(1.0);
  EXPECT_EQ(m.waited(0.9), 0.0);
  EXPECT_DOUBLE_EQ(m.waited(1.25), 0.25);
}

// The coordinator's decision of the new epoch was lost on its way: the others
// still wait for it in the old one, and a rerun sends a decision again.
TEST(Liveness, MembersStillInTheOldEpochAreAStall) {
  EXPECT_TRUE(stalled_with({-1, -1, -1}, 0, 0.6, 0));
  EXPECT_FALSE(stalled_with({-1, -1, -1}, 0.5, 0.6, 0)) << "node 0 has only just begun to wait in the new epoch";
}

TEST(Liveness, ASilentMemberIsAFailureNotAStall) {
  Liveness m(4, kBeat, kTimeout);
  for (double t = 0; t <= 0.6 + 1e-9; t += kBeat) m.beat(t);
  for (int p = 1; p < 4; ++p) m.heard(p, p == 3 ? 0.1 : 0.55, 1, {}, 0.4);
  m.set_waiting_since(0);
  EXPECT_TRUE(m.suspected(3, 0.6));
  EXPECT_FALSE(m.stalled({0, 1, 2, 3}, 0, 1, 0.6));
  EXPECT_TRUE(m.stalled({0, 1, 2}, 0, 1, 0.6)) << "without it, the others are stalled";
}

TEST(ControlMessage, RoundTripsMembersAndDetours) {
  ControlMessage msg{ControlMessage::kReconfigure, 7, 2, 1, 0, {0, 1, 2, 3}, {{1, 2, 0}, {0, 3, 1}}};
  const ControlMessage back = ControlMessage::decode(msg.encode(), 4);
  EXPECT_EQ(back.kind, msg.kind);
  EXPECT_EQ(back.epoch, 7);
  EXPECT_EQ(back.peer, 2);
  EXPECT_EQ(back.members, msg.members);
  EXPECT_EQ(back.detours, msg.detours);
}

TEST(ControlMessage, RefusesATruncatedMessage) {
  ControlMessage msg{ControlMessage::kReconfigure, 1, 2, 0, 0, {0, 1, 2}, {{0, 1, 2}}};
  engine::Payload p = msg.encode();
  p.bytes.resize(p.bytes.size() - 4);
  p.size = p.bytes.size();
  EXPECT_THROW(ControlMessage::decode(p, 4), std::invalid_argument);
  EXPECT_THROW(ControlMessage::decode(engine::Payload::of(std::vector<std::byte>(8)), 4), std::invalid_argument);
}

// Every field that indexes something (a kind, a strategy, a rank) is checked
// against what exists before the message is used.
TEST(ControlMessage, RefusesAFieldOutsideWhatExists) {
  const ControlMessage good{ControlMessage::kReconfigure, 3, 1, 2, 1, {0, 2, 3}, {{0, 3, 2}}};
  ASSERT_NO_THROW(ControlMessage::decode(good.encode(), 4));
  const std::vector<std::function<void(ControlMessage&)>> changes{
      [](ControlMessage& m) { m.kind = static_cast<ControlMessage::Kind>(9); },
      [](ControlMessage& m) { m.epoch = -1; },
      [](ControlMessage& m) { m.peer = 4; },
      [](ControlMessage& m) { m.strategy = 4; },
      [](ControlMessage& m) { m.strategy = -1; },
      [](ControlMessage& m) { m.secondary = 2; },
      [](ControlMessage& m) {
        m.members = {0, 4};
      },
      [](ControlMessage& m) {
        m.members = {0, 2, 2};
      },
      [](ControlMessage& m) {
        m.detours = {{0, -5, 1}};
      },
  };
  for (std::size_t i = 0; i < changes.size(); ++i) {
    ControlMessage bad = good;
    changes[i](bad);
    EXPECT_THROW(ControlMessage::decode(bad.encode(), 4), std::invalid_argument) << "change " << i;
  }
}

}  // namespace
