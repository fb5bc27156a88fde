// What a heartbeat may carry, and what a node does with one that is out of
// bounds: that one peer fails, by name, and the heartbeat loop goes on.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/base/error.hpp"
#include "engine/base/tags.hpp"
#include "engine/node/epoch_runtime.hpp"
#include "engine/node/liveness.hpp"

namespace {

using engine::Heartbeat;
using engine::Liveness;
using engine::Payload;

constexpr int kWorld = 4;

Payload beat(int epoch, float waited_s = -1, std::vector<float> ages = std::vector<float>(kWorld, 0.05f)) {
  return Heartbeat{epoch, waited_s, std::move(ages)}.encode();
}

// Rank 0 of `world`: each peer's heartbeats are the payloads queued for it.
// One round of beats: the loop's sleep ends it.
class ScriptedBeats : public engine::Runtime {
 public:
  explicit ScriptedBeats(Liveness& m) : m_(m), inbox_(kWorld) {}
  int rank() const override { return 0; }
  int world() const override { return kWorld; }
  double now() const override { return 1.0; }
  void sleep_for(double) override { m_.leave(); }
  void send(int, int, Payload) override {}
  Payload recv(int src, int tag, double) override {
    if (tag != engine::tags::kHeartbeat || inbox_[src].empty()) throw engine::Timeout(src, tag, 0);
    Payload p = std::move(inbox_[src].front());
    inbox_[src].pop_front();
    return p;
  }
  void queue(int src, Payload p) { inbox_[src].push_back(std::move(p)); }

 private:
  Liveness& m_;
  std::vector<std::deque<Payload>> inbox_;
};

std::string refusal_of(const Payload& p) {
  try {
    Heartbeat::decode(p, kWorld, 0);
    return "";
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

TEST(Heartbeat, EveryValueOutOfBoundsIsRefusedAndSaysWhich) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(refusal_of(beat(0)), "");
  EXPECT_EQ(refusal_of(beat(engine::tags::kFencedEpochs - 1, 3.5f)), "");  // the farthest ahead tags tell apart
  EXPECT_EQ(Heartbeat::decode(beat(0, -7), kWorld, 0).waited_s, -1);       // any negative wait: not waiting
  EXPECT_EQ(refusal_of(beat(-1)), "epoch -1 (this node is in epoch 0)");
  EXPECT_EQ(refusal_of(beat(engine::tags::kFencedEpochs)), "epoch 1023 (this node is in epoch 0)");
  EXPECT_EQ(refusal_of(beat(std::numeric_limits<int>::max())), "epoch 2147483647 (this node is in epoch 0)");
  EXPECT_EQ(refusal_of(beat(0, kNaN)), "waited nan s");
  EXPECT_EQ(refusal_of(beat(0, kInf)), "waited inf s");
  EXPECT_EQ(refusal_of(beat(0, -1, {0.1f, -2.0f, 0.1f, 0.1f})), "heard rank 1 -2 s ago");
  EXPECT_EQ(refusal_of(beat(0, -1, {0.1f, 0.1f, 0.1f, kNaN})), "heard rank 3 nan s ago");
  EXPECT_EQ(refusal_of(beat(0, -1, std::vector<float>(kWorld + 1, 0.1f))), "28 bytes, not a heartbeat of 4 nodes");
  EXPECT_EQ(refusal_of(Payload::sized(24)), "0 bytes, not a heartbeat of 4 nodes");
  // A long age only says "long ago"; a node further ahead is judged from its own epoch.
  EXPECT_EQ(refusal_of(beat(0, 1e30f, std::vector<float>(kWorld, 1e30f))), "");
  EXPECT_NO_THROW(Heartbeat::decode(beat(2000), kWorld, 1000));
}

TEST(Heartbeat, AMalformedHeartbeatFailsOnlyItsSenderAndNamesWhy) {
  Liveness m(kWorld, 0.05, 0.25);
  ScriptedBeats rt(m);
  rt.queue(1, beat(0));
  rt.queue(2, beat(0));
  rt.queue(2, beat(-5));
  rt.queue(3, beat(0, -1, {0.1f, 0.1f, -1.5f, 0.1f}));
  engine::run_heartbeats(rt, m);

  EXPECT_EQ(m.refused(1), "");
  EXPECT_FALSE(m.suspected(1, 1.0));
  EXPECT_EQ(m.refused(2), "malformed heartbeat: epoch -5 (this node is in epoch 0)");
  EXPECT_EQ(m.refused(3), "malformed heartbeat: heard rank 2 -1.5 s ago");
  EXPECT_TRUE(m.suspected(2, 1.0));
  EXPECT_TRUE(m.down(2, 1.0, 0)) << "a refused node is down, not behind a dead cable";
  // The engine's next receive fails the first refused member, with the reason.
  engine::EpochRuntime epoch(rt, m, {0, 1, 2, 3}, 0);
  try {
    epoch.recv(1, engine::tags::kStep, 0.01);
    FAIL() << "a refused member went unnoticed";
  } catch (const engine::PeerFailure& e) {
    EXPECT_EQ(e.peer(), 2);
    EXPECT_STREQ(e.what(), "peer 2 failed: malformed heartbeat: epoch -5 (this node is in epoch 0)");
  }
}

}  // namespace
