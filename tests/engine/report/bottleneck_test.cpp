// How a step's measured time is split into the seven terms a report shows.
#include "engine/report/bottleneck.hpp"

#include <gtest/gtest.h>

namespace {

using engine::NodeResult;
using engine::StepKind;
using engine::StepTrace;

// A step from `start_s` to `end_s` of `tokens` new tokens, `prefill` of them prompt.
StepTrace step(double start_s, double end_s, int tokens, int prefill) {
  StepTrace st;
  st.start_s = start_s;
  st.end_s = end_s;
  st.tokens = tokens;
  st.prefill_tokens = prefill;
  st.bytes_to = {0, 0};
  return st;
}

TEST(Bottleneck, ComputeSplitsByTheRooflineCommunicationByTheLinkCardAndTheRestIsWaiting) {
  NodeResult node;
  node.steps.push_back(step(0, 1, 4, 4));  // the prompt
  StepTrace decode = step(1.1, 1.3, 1, 0);
  decode.compute_s = 0.1;
  decode.modelled = {.seconds = 5, .memory_s = 3, .arithmetic_s = 1, .dispatch_s = 1, .floor_s = 0.05};
  decode.comm_s = 0.05;
  decode.wait_s = 0.01;
  decode.messages = 2;
  decode.message_s = 0.005;  // latency: 0.01 s charged
  decode.link_bandwidth = 1e5;
  decode.bytes_to = {0, 1000};  // 0.01 s
  decode.relayed = {500};       // half of it forwarded: its second hop, 0.005 + 0.005 s
  node.steps.push_back(decode);
  // Outside the steps: 0.3 s of communication, 0.15 s a step, more than the 0.1 s gap before the decode step.
  node.traffic.comm_s = 0.05 + 0.3 + 0.01;
  node.traffic.wait_s = 0.01;

  const auto t = engine::node_terms(node, StepKind::kDecode);
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->token_s, 1.3 - 1.0);  // a token is the previous step's end to this one's
  EXPECT_DOUBLE_EQ(t->weight_reads_s, 0.06);
  EXPECT_DOUBLE_EQ(t->arithmetic_s, 0.02);
  EXPECT_DOUBLE_EQ(t->dispatch_s, 0.02);
  EXPECT_NEAR(t->latency_s, 0.04 / 3 + 0.1, 1e-12);  // and the gap's communication, no more than the gap
  EXPECT_NEAR(t->bandwidth_s, 0.04 / 3, 1e-12);
  EXPECT_NEAR(t->relay_s, 0.04 / 3, 1e-12);
  EXPECT_NEAR(t->waiting_s, 0.3 - 0.1 - 0.04 - 0.1, 1e-12);
  EXPECT_NEAR(t->compute_s() + t->comm_s() + t->waiting_s, t->token_s, 1e-12);
  EXPECT_DOUBLE_EQ(t->floor_s, 0.05);
}

TEST(Bottleneck, TheDecodeTokenIsTheMedianStepWeightedByItsTokensAsTheItlIs) {
  NodeResult node;
  node.steps = {step(0, 1, 8, 8), step(1, 1.3, 1, 0), step(1.3, 1.7, 3, 0), step(1.7, 2.2, 1, 0)};
  node.traffic.bytes_to = {0, 0};
  // Intervals 0.3 (1 token), 0.4 (3 tokens), 0.5 (1 token): 3 of the 5 gaps are 0.4 s.
  EXPECT_NEAR(engine::node_terms(node, StepKind::kDecode)->token_s, 0.4, 1e-12);
  EXPECT_NEAR(engine::node_terms(node, StepKind::kDecode)->tokens, 3, 1e-12);
}

TEST(Bottleneck, APrefillStepRunsFromItsStartToItsEndAndANodeWithoutOneHasNone) {
  NodeResult node;
  node.steps = {step(0, 0.5, 1, 0), step(2, 2.8, 600, 512), step(2.8, 2.9, 1, 0)};
  const auto t = engine::node_terms(node, StepKind::kPrefill);
  ASSERT_TRUE(t);
  EXPECT_NEAR(t->token_s, 0.8, 1e-12);  // not from 0.5: the idle time before it is no part of it
  EXPECT_EQ(t->tokens, 600);
  node.steps.erase(node.steps.begin() + 1);
  EXPECT_FALSE(engine::node_terms(node, StepKind::kPrefill));
}

}  // namespace
