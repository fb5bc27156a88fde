// An rdma-stack-failure that IP survives, on the netns mesh: softrdma's switch
// carries it out (the veths stay up), so it needs ranks that talk verbs.
#include "hw/faults/stack_failure.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/cli_runner.hpp"

namespace {

engine::Scenario stack_failures(std::initializer_list<bool> ip_survives) {
  engine::Scenario s;
  for (const bool survives : ip_survives) {
    engine::FaultSpec f;
    f.kind = engine::FaultKind::kRdmaStackFailure;
    f.at_s = 1.0 + s.faults.size();
    f.ip_survives = survives;
    s.faults.push_back(f);
  }
  return s;
}

TEST(StackFailure, OneThatIpSurvivesIsRefusedWhereTheRanksTalkTcpSayingWhere) {
  const auto refusal = hw::ip_surviving_stack_failure_refusal(stack_failures({false, true}), false);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->json_path, "/faults/1/ip_survives");
  EXPECT_NE(refusal->reason.find("add --netns-rdma"), std::string::npos) << refusal->reason;
  EXPECT_FALSE(hw::ip_surviving_stack_failure_refusal(stack_failures({false, true}), true));
  EXPECT_FALSE(hw::ip_surviving_stack_failure_refusal(stack_failures({false}), false));
}

// On the netns mesh the switch takes only a failure IP survives: the veths carry the others.
TEST(StackFailure, TheNetnsMeshsSwitchFlipsOnlyForAFailureIpSurvives) {
  const std::string dir = testsupport::fresh_dir("stack-switch");
  EXPECT_FALSE(hw::StackFailureSwitch(stack_failures({false}), dir, true).armed());
  hw::StackFailureSwitch ip(stack_failures({false, true}), dir, true);
  ASSERT_TRUE(ip.armed());
  EXPECT_FALSE(ip.flip_due(1.5));  // the first failure is the veths'
  EXPECT_TRUE(ip.flip_due(2.0));
  EXPECT_TRUE(std::filesystem::exists(dir + "/rdma-stack-failed"));
}

}  // namespace
