// The launcher's cable steps, recorded without namespaces: a cable held down
// by overlapping faults comes back only when the last one ends, as in the
// simulator (both follow engine::CableHolds).
#include <gtest/gtest.h>

#include <utility>

#include "hw/faults/netns_faults.hpp"

namespace {

using engine::FaultKind;

struct Recorder : hw::CableSwitch {
  std::vector<std::pair<double, bool>> states;     // (run time, up) of cable 0-1
  std::vector<std::pair<double, bool>> secondary;  // (run time, up) of rank 0's secondary port
  double now = 0;
  void set_link_up(int, int, bool up) override { states.push_back({now, up}); }
  void shape_link(int, int, const std::string&) override {}
  void set_secondary_port_up(int r, bool up) override {
    if (r == 0) secondary.push_back({now, up});
  }
};

engine::Scenario two_nodes(std::vector<engine::FaultSpec> faults) {
  engine::Scenario s;
  s.nodes.resize(2);
  s.deadline_s = 30;
  s.faults = std::move(faults);
  return s;
}

engine::FaultSpec on_cable(FaultKind kind, double at_s, double duration_s) {
  engine::FaultSpec f;
  f.kind = kind;
  f.at_s = at_s;
  f.duration_s = duration_s;
  f.target = "m1-m2";
  f.node = 0;
  f.peer = 1;
  return f;
}

// Runs the launcher's clock in 10 ms ticks up to `until_s`; a restarted node boots in 1 s.
Recorder run(const engine::Scenario& s, double until_s) {
  Recorder cables;
  hw::NetnsFaults faults(s, cables, 50e6, {1, 1});
  for (int tick = 0; tick <= until_s * 100; ++tick) {
    cables.now = tick / 100.0;
    faults.apply_due(cables.now, {-1, -1}, [](const engine::RunEvent&) {});
  }
  return cables;
}

engine::FaultSpec flap(double at_s, double duration_s) {
  engine::FaultSpec f = on_cable(FaultKind::kLinkFlap, at_s, duration_s);
  f.period_s = 0.4;
  f.duty = 0.5;
  return f;
}

TEST(NetnsFaultsCable, AFlapInsideALongerLinkDownLeavesTheCableDownUntilTheLinkDownEnds) {
  const Recorder cables = run(two_nodes({on_cable(FaultKind::kLinkDown, 1, 3), flap(1.5, 1.2)}), 6);
  ASSERT_FALSE(cables.states.empty());
  for (const auto& [t, up] : cables.states)
    if (t < 4) {
      EXPECT_FALSE(up) << "cable up at " << t << " s, inside the link-down";
    }
  EXPECT_TRUE(cables.states.back().second);
  EXPECT_DOUBLE_EQ(cables.states.back().first, 4);
}

TEST(NetnsFaultsCable, ALinkDownLongerThanAFlapKeepsTheCableDownAfterTheFlapEnds) {
  const Recorder cables = run(two_nodes({flap(1, 1.2), on_cable(FaultKind::kLinkDown, 1.1, 3)}), 6);
  for (const auto& [t, up] : cables.states)
    if (t >= 1.1 && t < 4.1) {
      EXPECT_FALSE(up) << "cable up at " << t << " s, inside the link-down";
    }
  EXPECT_TRUE(cables.states.back().second);
  EXPECT_DOUBLE_EQ(cables.states.back().first, 4.1);
}

TEST(NetnsFaultsCable, ALinkUpReplugsTheCableWhateverHeldItDown) {
  const Recorder cables = run(two_nodes({on_cable(FaultKind::kLinkDown, 1, 0), on_cable(FaultKind::kLinkDown, 1.5, 3),
                                         on_cable(FaultKind::kLinkUp, 2, 0), on_cable(FaultKind::kLinkDown, 5, 0.5)}),
                              6);
  const std::vector<std::pair<double, bool>> expected{{1, false},
                                                      {1.5, false},
                                                      {2, true},
                                                      // a hold ending after the replug releases nothing more:
                                                      {4.5, true},
                                                      {5, false},
                                                      {5.5, true}};
  EXPECT_EQ(cables.states, expected);
}

engine::FaultSpec on_node(FaultKind kind, double at_s) {
  engine::FaultSpec f;
  f.kind = kind;
  f.at_s = at_s;
  f.target = "m1";
  f.node = 0;
  return f;
}

// Killing a rank makes its kernel close its connections, which a machine that
// loses power does not: its peers would learn of it at once, not from silence.
TEST(NetnsFaultsCable, ACrashedNodesCablesGoDarkAsItDiesAndStayDark) {
  const Recorder cables = run(two_nodes({on_node(FaultKind::kNodeCrash, 1), on_cable(FaultKind::kLinkDown, 2, 1)}), 6);
  const std::vector<std::pair<double, bool>> expected{{1, false}, {2, false}, {3, false}};
  EXPECT_EQ(cables.states, expected);
}

TEST(NetnsFaultsCable, AReplugDoesNotLightACableWhoseEndHasNoPower) {
  const Recorder cables = run(two_nodes({on_node(FaultKind::kNodeCrash, 1), on_cable(FaultKind::kLinkUp, 2, 0)}), 6);
  const std::vector<std::pair<double, bool>> expected{{1, false}, {2, false}};
  EXPECT_EQ(cables.states, expected);
}

TEST(NetnsFaultsCable, ARestartedNodesCablesComeBackWhenItHasBooted) {
  const Recorder cables =
      run(two_nodes({on_node(FaultKind::kNodeRestart, 1), on_cable(FaultKind::kLinkDown, 1.5, 2)}), 6);
  const std::vector<std::pair<double, bool>> expected{{1, false},
                                                      {1.5, false},
                                                      {2, false},  // booted, but the link-down holds it
                                                      {3.5, true}};
  EXPECT_EQ(cables.states, expected);
  // Its port on the secondary network has no power either, until it boots.
  const std::vector<std::pair<double, bool>> port{{1, false}, {2, true}};
  EXPECT_EQ(cables.secondary, port);
}

// As in simulation: every cable of the mesh off for good, a replug included;
// the secondary network, a switch's, is untouched.
TEST(NetnsFaultsCable, AnRdmaStackFailureTakesEveryCableDownForGood) {
  engine::FaultSpec stack = on_node(FaultKind::kRdmaStackFailure, 1);
  stack.node = -1;
  const Recorder cables = run(two_nodes({stack, on_cable(FaultKind::kLinkUp, 2, 0)}), 6);
  const std::vector<std::pair<double, bool>> expected{{1, false}, {2, false}};
  EXPECT_EQ(cables.states, expected);
  EXPECT_TRUE(cables.secondary.empty());
}

// Where the scenario says IP survives the stack, the veths stay up (softrdma's
// switch fails the devices): a cable pulled later still goes down and comes back.
TEST(NetnsFaultsCable, AnRdmaStackFailureThatIpSurvivesLeavesTheCablesToTheirOtherFaults) {
  engine::FaultSpec stack = on_node(FaultKind::kRdmaStackFailure, 1);
  stack.node = -1;
  stack.ip_survives = true;
  const Recorder cables = run(two_nodes({stack, on_cable(FaultKind::kLinkDown, 2, 1)}), 6);
  const std::vector<std::pair<double, bool>> expected{{2, false}, {3, true}};
  EXPECT_EQ(cables.states, expected);
  EXPECT_TRUE(cables.secondary.empty());
}

}  // namespace
