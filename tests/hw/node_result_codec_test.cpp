// A real rank's results reach the reporting rank whole: what its report splits
// a token by travels with each step.
#include "hw/node_result_codec.hpp"

#include <gtest/gtest.h>

namespace {

TEST(NodeResultCodec, AStepArrivesWithWhatItsTimeIsMadeOf) {
  hw::NodeReport sent;
  sent.node.traffic.bytes_to = {0, 10};
  sent.node.traffic.messages_to = {0, 1};
  engine::StepTrace st;
  st.start_s = 1;
  st.end_s = 1.5;
  st.compute_s = 0.3;
  st.comm_s = 0.1;
  st.tokens = 9;
  st.bytes_to = {0, 10};
  st.wait_s = 0.05;
  st.relayed = {0, 4, 0, 0};
  st.prefill_tokens = 8;
  st.modelled = {.seconds = 0.3, .memory_s = 0.1, .arithmetic_s = 0.15, .dispatch_s = 0.05, .floor_s = 0.12};
  st.messages = 3;
  st.message_s = 2e-6;
  st.link_bandwidth = 8e9;
  sent.node.steps.push_back(st);

  const auto got = hw::decode_node_report(hw::encode_node_report(sent)).node.steps.at(0);
  EXPECT_EQ(got.tokens, 9);
  EXPECT_EQ(got.relayed, st.relayed);
  EXPECT_EQ(got.prefill_tokens, 8);
  EXPECT_DOUBLE_EQ(got.modelled.seconds, 0.3);
  EXPECT_DOUBLE_EQ(got.modelled.memory_s, 0.1);
  EXPECT_DOUBLE_EQ(got.modelled.arithmetic_s, 0.15);
  EXPECT_DOUBLE_EQ(got.modelled.dispatch_s, 0.05);
  EXPECT_DOUBLE_EQ(got.modelled.floor_s, 0.12);
  EXPECT_EQ(got.messages, 3u);
  EXPECT_DOUBLE_EQ(got.message_s, 2e-6);
  EXPECT_DOUBLE_EQ(got.link_bandwidth, 8e9);
}

}  // namespace
