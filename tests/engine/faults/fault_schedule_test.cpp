// A scenario's faults as the timed actions both worlds carry out: what each
// kind does to cables and nodes, and when.
#include "engine/faults/fault_schedule.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/faults/tcp_instability.hpp"
#include "engine/input/scenario_file.hpp"

namespace {

using engine::FaultKind;
using Op = engine::FaultAction::Op;
using Change = engine::CableHolds::Change;

engine::FaultSpec fault(FaultKind kind, double at_s, double duration_s = 0) {
  engine::FaultSpec f;
  f.kind = kind;
  f.at_s = at_s;
  f.duration_s = duration_s;
  return f;
}

// Four nodes in a full mesh (scenarios/ci/link-down-reroute.json), with `f` its only fault.
engine::Scenario with_fault(engine::FaultSpec f) {
  engine::Scenario s =
      engine::load_scenario(std::string(MESHINFER_SOURCE_DIR) + "/scenarios/ci/link-down-reroute.json",
                            engine::Catalog::builtin());
  f.node = 0;
  f.peer = f.kind <= FaultKind::kLinkFlap ? 1 : -1;
  f.target = f.peer >= 0 ? s.nodes[0].name + "-" + s.nodes[1].name : s.nodes[0].name;
  s.faults = {f};
  return s;
}

const std::vector<double> kBoot = {90, 90, 90, 90};

TEST(FaultSchedule, ALinkDownForAWhileHoldsTheCableThenReleasesIt) {
  const auto actions = engine::timed_actions(with_fault(fault(FaultKind::kLinkDown, 5, 2)), kBoot);
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(actions[0].op, Op::kCable);
  EXPECT_EQ(actions[0].change, Change::kHold);
  EXPECT_EQ(actions[0].at_s, 5);
  EXPECT_EQ(actions[0].event.kind, "link-down");
  EXPECT_EQ(actions[1].change, Change::kRelease);
  EXPECT_EQ(actions[1].at_s, 7);
  EXPECT_EQ(actions[1].event.kind, "link-up");
}

TEST(FaultSchedule, AFlapRunsWholeCyclesUntilItsEndAndIsNotedOnce) {
  engine::FaultSpec f = fault(FaultKind::kLinkFlap, 1, 3.5);
  f.period_s = 1;
  f.duty = 0.25;
  const auto actions = engine::timed_actions(with_fault(f), kBoot);
  ASSERT_EQ(actions.size(), 1u + 2 * 3);  // the note, then cycles at 1, 2 and 3 (one at 4 would end past 4.5)
  EXPECT_EQ(actions[0].op, Op::kNote);
  EXPECT_EQ(actions[0].event.kind, "link-flap");
  for (int c = 0; c < 3; ++c) {
    const auto& down = actions[1 + 2 * c];
    const auto& up = actions[2 + 2 * c];
    EXPECT_EQ(down.change, Change::kHold);
    EXPECT_DOUBLE_EQ(down.at_s, 1 + c);
    EXPECT_EQ(up.change, Change::kRelease);
    EXPECT_DOUBLE_EQ(up.at_s, 1.25 + c);
    EXPECT_TRUE(down.event.kind.empty() && up.event.kind.empty());
  }
}

TEST(FaultSchedule, ARestartPowersTheNodeOffAndBootsItAfterItsBootTime) {
  const auto actions = engine::timed_actions(with_fault(fault(FaultKind::kNodeRestart, 3)), kBoot);
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(actions[0].op, Op::kPowerOff);
  EXPECT_EQ(actions[0].event.kind, "node-crash");
  EXPECT_EQ(actions[1].op, Op::kBoot);
  EXPECT_EQ(actions[1].at_s, 93);
  EXPECT_EQ(actions[1].event.kind, "node-up");
}

TEST(FaultSchedule, TcpInstabilityRebootsTheNodesBothWorldsDraw) {
  const engine::Scenario s = with_fault(fault(FaultKind::kTcpInstability, 2));
  const auto actions = engine::timed_actions(s, kBoot);
  std::vector<int> off;
  for (const auto& a : actions)
    if (a.op == Op::kPowerOff) off.push_back(a.node);
  EXPECT_EQ(off, engine::tcp_instability_reboots(s, s.faults[0]));
  EXPECT_EQ(actions.size(), 2 * off.size());
}

TEST(FaultSchedule, DegradeHangAndSlowEachEndWithTheirDuration) {
  engine::FaultSpec degrade = fault(FaultKind::kLinkDegrade, 1, 1);
  degrade.factor = 0.5;
  degrade.added_latency_s = 0.001;
  auto actions = engine::timed_actions(with_fault(degrade), kBoot);
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(actions[0].factor, 0.5);
  EXPECT_EQ(actions[0].added_latency_s, 0.001);
  EXPECT_EQ(actions[1].event.kind, "link-restored");

  actions = engine::timed_actions(with_fault(fault(FaultKind::kNodeHang, 1, 4)), kBoot);
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(actions[0].op, Op::kHang);
  EXPECT_EQ(actions[1].op, Op::kResume);
  EXPECT_EQ(actions[1].at_s, 5);

  engine::FaultSpec slow = fault(FaultKind::kNodeSlow, 1);
  slow.factor = 0.3;
  actions = engine::timed_actions(with_fault(slow), kBoot);
  ASSERT_EQ(actions.size(), 1u);  // no duration: slow to the end
  EXPECT_EQ(actions[0].op, Op::kThrottle);
  EXPECT_EQ(actions[0].factor, 0.3);
}

}  // namespace
