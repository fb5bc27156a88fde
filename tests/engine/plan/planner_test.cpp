// Placement: expected shares are derived here from the cards, not pasted.
#include "engine/plan/planner.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "engine/cards/model_math.hpp"

namespace {

using engine::Catalog;
using engine::make_plan;
using engine::PlanError;

engine::Scenario cluster(const std::vector<std::string>& hardware, const std::string& model, const std::string& quant) {
  engine::Scenario s;
  s.name = "test";
  for (std::size_t i = 0; i < hardware.size(); ++i) s.nodes.push_back({"n" + std::to_string(i), hardware[i]});
  s.model = model;
  s.quant = quant;
  return s;
}

const std::vector<std::string> kReferenceCluster = {"m3-ultra-512gb", "m3-ultra-512gb", "m3-ultra-256gb",
                                                    "m3-ultra-256gb"};

TEST(Planner, PipelineSplitsLayersByMemoryOnMixedCluster) {
  const auto& catalog = Catalog::builtin();
  const auto s = cluster(kReferenceCluster, "qwen3-235b-a22b", "8bit");
  const auto plan = make_plan(s, catalog, engine::Strategy::kPipeline);
  ASSERT_EQ(plan.shards.size(), 4u);
  int total = 0;
  double memory = 0;
  for (const auto& sh : plan.shards) memory += sh.memory_bytes;
  for (const auto& sh : plan.shards) {
    total += sh.layers();
    // Within two layers of the memory-proportional share (embeddings shift it a little).
    EXPECT_NEAR(sh.layers(), 94.0 * sh.memory_bytes / memory, 2.0) << sh.node_name;
    EXPECT_GT(sh.free_bytes(), 0);
  }
  EXPECT_EQ(total, 94);
  EXPECT_GT(plan.shards[0].layers(), plan.shards[2].layers());
  EXPECT_EQ(plan.shards[0].first_layer, 0);
  EXPECT_EQ(plan.shards[3].end_layer, 94);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(plan.shards[i].first_layer, plan.shards[i - 1].end_layer);
}

TEST(Planner, TensorDividesHeadsAndWeightsEvenly) {
  const auto& catalog = Catalog::builtin();
  const auto s = cluster(kReferenceCluster, "qwen3-235b-a22b", "8bit");
  const auto plan = make_plan(s, catalog, engine::Strategy::kTensor);
  const auto& m = catalog.model("qwen3-235b-a22b");
  const double total_bytes = engine::weight_bytes(m, m.quant("8bit"));
  for (const auto& sh : plan.shards) {
    EXPECT_EQ(sh.heads, 16);
    EXPECT_EQ(sh.kv_heads, 1);
    EXPECT_NEAR(sh.weight_bytes, total_bytes / 4, 0.01 * total_bytes / 4);
  }
  // The 256 GB nodes bound the KV cache: their free bytes over their KV per token.
  const auto& small = plan.shards[2];
  EXPECT_DOUBLE_EQ(plan.kv_capacity_tokens, small.free_bytes() / small.kv_bytes_per_token);
  EXPECT_DOUBLE_EQ(small.kv_bytes_per_token, engine::kv_bytes_per_token(m) / 4);
}

TEST(Planner, TensorRefusesThreeNodesAndPointsToUneven) {
  const auto s = cluster({"m3-ultra-512gb", "m3-ultra-512gb", "m3-ultra-512gb"}, "qwen3-235b-a22b", "8bit");
  try {
    make_plan(s, Catalog::builtin(), engine::Strategy::kTensor);
    FAIL() << "expected a refusal";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor-uneven"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("divide by 3"), std::string::npos) << e.what();
  }
}

TEST(Planner, TensorUnevenSplitsHeadsAndReplicatesKvGroups) {
  const auto s = cluster({"m3-ultra-512gb", "m3-ultra-512gb", "m3-ultra-512gb"}, "qwen3-235b-a22b", "8bit");
  const auto plan = make_plan(s, Catalog::builtin(), engine::Strategy::kTensorUneven);
  // 64 heads over 3 equal nodes: 22, 21, 21; 16 heads share a KV head, so
  // heads 0-21, 22-42 and 43-63 each straddle two KV groups.
  std::vector<int> heads, kv;
  for (const auto& sh : plan.shards) {
    heads.push_back(sh.heads);
    kv.push_back(sh.kv_heads);
  }
  EXPECT_EQ(heads, (std::vector<int>{22, 21, 21}));
  EXPECT_EQ(kv, (std::vector<int>{2, 2, 2}));
  EXPECT_NEAR(plan.shards[0].ffn_fraction, 22.0 / 64, 1e-12);
}

TEST(Planner, RefusesWhatDoesNotFitWithTheShortfall) {
  const auto s = cluster({"m3-ultra-512gb", "m3-ultra-512gb"}, "deepseek-v3.1", "bf16");
  try {
    make_plan(s, Catalog::builtin(), engine::Strategy::kTensor);
    FAIL() << "expected a refusal";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("GB short"), std::string::npos) << e.what();
  }
}

TEST(Planner, ExpertParallelNeedsMoeAndSplitsExperts) {
  EXPECT_THROW(make_plan(cluster({"m3-ultra-512gb", "m3-ultra-512gb"}, "llama-3.3-70b", "8bit"), Catalog::builtin(),
                         engine::Strategy::kExpert),
               PlanError);
  const auto plan =
      make_plan(cluster(kReferenceCluster, "qwen3-235b-a22b", "4bit"), Catalog::builtin(), engine::Strategy::kExpert);
  int experts = 0;
  for (const auto& sh : plan.shards) experts += sh.experts;
  EXPECT_EQ(experts, 128);
  EXPECT_GT(plan.shards[0].experts, plan.shards[3].experts);  // more memory, more experts
}

TEST(Planner, SingleNodeKvCapacityIsFreeMemoryOverKvPerToken) {
  const auto& catalog = Catalog::builtin();
  const auto plan = make_plan(cluster({"m3-ultra-512gb"}, "llama-3.3-70b", "8bit"), catalog, engine::Strategy::kTensor);
  const auto& m = catalog.model("llama-3.3-70b");
  const auto& hw = catalog.hardware("m3-ultra-512gb");
  const double free = hw.memory_bytes * hw.usable_memory_fraction - engine::weight_bytes(m, m.quant("8bit"));
  EXPECT_NEAR(plan.kv_capacity_tokens, free / engine::kv_bytes_per_token(m), 1.0);
}

}  // namespace
