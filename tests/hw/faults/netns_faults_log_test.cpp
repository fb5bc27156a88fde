// The launcher's log of applied faults, as the reporting rank reads it.
#include <gtest/gtest.h>

#include "hw/faults/netns_faults.hpp"
#include "support/cli_runner.hpp"

namespace {

// Ranks leave the barrier milliseconds apart. A SIGKILL is seen within
// milliseconds, so a fault placed on another rank's clock could come after its
// own detection, and the report would find no detection after the fault.
TEST(NetnsFaultsLog, TheReaderPlacesEachFaultOnItsOwnRunClock) {
  const std::string log = testsupport::fresh_dir("faults-log") + "/applied-faults.jsonl";
  hw::append_event(log, 1000.0, {0, "netns-mesh", "", "mesh"});
  hw::append_event(log, 1001.25, {99, "node-crash", "m4", "power lost"});

  const auto early = hw::read_events(log, 1000.0), late = hw::read_events(log, 1000.02);
  ASSERT_EQ(early.size(), 2u);
  ASSERT_EQ(late.size(), 2u);
  EXPECT_EQ(early[1].kind, "node-crash");
  EXPECT_EQ(early[1].target, "m4");
  EXPECT_EQ(early[1].detail, "power lost");
  EXPECT_DOUBLE_EQ(early[1].t_s, 1.25);
  EXPECT_NEAR(late[1].t_s, 1.23, 1e-9);
  // Logged before the run began (the mesh): at the start of either clock.
  EXPECT_EQ(early[0].t_s, 0);
  EXPECT_EQ(late[0].t_s, 0);
}

}  // namespace
