// Faults on a real netns mesh's cables: overlapping faults keep a veth down
// until the last one ends, as the simulator keeps its cable down.
#include "hw/faults/netns_faults.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include "hw/netns_mesh.hpp"
#include "support/cli_runner.hpp"
#include "support/skip.hpp"

namespace {

// Whether rank a's end of the cable to rank b is administratively up.
bool veth_up(const hw::NetnsMesh& mesh, int a, int b) {
  const auto r = testsupport::run_shell("ip -n " + mesh.ns(a) + " -o link show dev v" + std::to_string(b));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output.find(",UP") != std::string::npos || r.output.find("<UP") != std::string::npos;
}

TEST(NetnsFaults, AVethHeldDownByALinkDownStaysDownThroughAFlapsUpPhases) {
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty())
    SKIP_UNLESS_CI_PROVIDES(::geteuid() == 0, why);
  hw::NetnsMesh mesh(2);
  engine::Scenario s;
  s.nodes.resize(2);
  s.deadline_s = 30;
  engine::FaultSpec down{
      .at_s = 1, .kind = engine::FaultKind::kLinkDown, .target = "m1-m2", .node = 0, .peer = 1, .duration_s = 3};
  engine::FaultSpec flap = down;
  flap.kind = engine::FaultKind::kLinkFlap;
  flap.at_s = 1.5;
  flap.duration_s = 1;
  flap.period_s = 0.4;
  flap.duty = 0.5;
  s.faults = {down, flap};
  hw::NetnsFaults faults(s, mesh, 50e6);
  const auto at = [&](double t) { faults.apply_due(t, {-1, -1}, [](const engine::RunEvent&) {}); };

  ASSERT_TRUE(veth_up(mesh, 0, 1));
  at(1.0);
  EXPECT_FALSE(veth_up(mesh, 0, 1));
  EXPECT_FALSE(veth_up(mesh, 1, 0));
  at(1.8);  // the flap's first down phase ended at 1.7 s
  EXPECT_FALSE(veth_up(mesh, 0, 1));
  EXPECT_FALSE(veth_up(mesh, 1, 0));
  at(4.0);  // the link-down ends
  EXPECT_TRUE(veth_up(mesh, 0, 1));
  EXPECT_TRUE(veth_up(mesh, 1, 0));
}

}  // namespace
