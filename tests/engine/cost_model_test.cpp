// The cost model against times worked out by hand from the cards (the figures
// in the comments are the arithmetic): one attention and one MoE layer of
// Qwen3-235B (GQA, no shared expert) and DeepSeek-V3.1 (MLA, one shared expert)
// on one M3 Ultra, with a stack of round numbers.
#include "engine/cost_model.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/catalog.hpp"

namespace {

using engine::Catalog;

// Round numbers, so every figure below can be checked on paper.
engine::StackCard stack() {
  engine::StackCard p;
  p.memory_bandwidth_efficiency = 0.5;  // 819 GB/s (hardware card) -> 409.5 GB/s
  p.compute_efficiency = 0.5;           // 27 TFLOP/s (hardware card) -> 13.5 TFLOP/s
  p.expert_compute_efficiency = 0.25;   // routed-expert matmuls: 6.75 TFLOP/s
  p.per_layer_overhead_s = 100e-6;      // once per layer, charged with the attention block
  p.per_op_overhead_s = 10e-6;          // once per block (attention, FFN, LM head)
  p.per_expert_overhead_s = 5e-6;       // per routed expert a step touches
  return p;
}

constexpr double kBandwidth = 409.5e9;  // bytes/s
constexpr double kFlops = 13.5e12;
constexpr double kExpertFlops = 6.75e12;
constexpr double kBytesPerWeight = 8.5 / 8;  // "8bit": 8.5 bits a weight with its group scales

const engine::HardwareCard& m3_ultra() { return Catalog::builtin().hardware("m3-ultra-512gb"); }

// One node holding the whole model.
engine::Shard whole(const engine::ModelCard& m) {
  engine::Shard s;
  s.end_layer = m.layers;
  s.heads = m.heads;
  s.kv_heads = m.kv_heads;
  s.experts = m.moe ? m.moe->experts : 0;
  return s;
}

// One decode token attending to 100 cached tokens.
engine::StepShape decode_after_100() {
  engine::StepShape s;
  s.tokens = s.sequences = s.logits = 1;
  s.attended = s.kv_read_tokens = 100;
  return s;
}

void expect_close(double actual, double expected) { EXPECT_NEAR(actual, expected, expected * 1e-9); }

TEST(CostModelByHand, QwenGqaAttentionStreamsItsProjectionsAndTheKvOfItsHeads) {
  const auto& m = Catalog::builtin().model("qwen3-235b-a22b");  // hidden 4096, 64 heads, 4 KV heads, head_dim 128
  const auto p = stack();
  const auto shard = whole(m);
  const engine::CostModel cost(m, m.quant("8bit"), m3_ultra(), p, shard);
  // q and o: 2 x 4096 x (64 x 128) = 67,108,864; k and v: 2 x 4096 x (4 x 128) = 4,194,304; two norms: 8,192.
  const double weights = 67108864.0 + 4194304 + 8192;  // 71,311,360
  const double kv = 100 * 2 * 4 * 128 * 2.0;           // 100 cached tokens of K and V, 4 heads of 128, 16-bit
  const double memory_s = (weights * kBytesPerWeight + kv) / kBandwidth;  // 75,973,120 B: 185.53 us
  // 2 FLOPs per weight, and per cached token 64 heads x 128 x 4 (QK^T and AV): 145.9 MFLOP, 10.8 us: memory-bound.
  const double compute_s = (2 * weights + 100 * 64 * 128 * 4.0) / kFlops;
  ASSERT_GT(memory_s, compute_s);
  expect_close(cost.attention_s(10, decode_after_100()), memory_s + 10e-6 + 100e-6);  // 295.53 us
}

TEST(CostModelByHand, QwenAttentionOnHalfTheHeadsReadsHalfTheWeightsButPaysTheSameOverheads) {
  const auto& m = Catalog::builtin().model("qwen3-235b-a22b");
  const auto p = stack();
  auto shard = whole(m);
  shard.heads = 32;  // tensor parallel over 2 nodes
  shard.kv_heads = 2;
  const engine::CostModel cost(m, m.quant("8bit"), m3_ultra(), p, shard);
  const double weights = 67108864.0 / 2 + 4194304 / 2 + 8192;  // norms are replicated
  const double kv = 100 * 2 * 2 * 128 * 2.0;
  expect_close(cost.attention_s(10, decode_after_100()), (weights * kBytesPerWeight + kv) / kBandwidth + 110e-6);
}

TEST(CostModelByHand, QwenMoeDecodeReadsTheEightRoutedExpertsAndTheRouter) {
  const auto& m = Catalog::builtin().model("qwen3-235b-a22b");  // 128 experts of 1536, 8 active, none shared
  const auto p = stack();
  const auto shard = whole(m);
  const engine::CostModel cost(m, m.quant("8bit"), m3_ultra(), p, shard);
  const double expert = 3 * 4096 * 1536.0;  // gate, up, down: 18,874,368
  const double router = 4096 * 128.0;       // 524,288
  // One token touches 128 x (1 - (1 - 8/128)^1) = 8 experts.
  const double memory_s = (8 * expert + router) * kBytesPerWeight / kBandwidth;  // 160,989,184 B: 393.14 us
  const double compute_s = 2 * router / kFlops + 2 * 8 * expert / kExpertFlops;  // 44.8 us: memory-bound
  ASSERT_GT(memory_s, compute_s);
  expect_close(cost.ffn_s(10, decode_after_100()), memory_s + 10e-6 + 8 * 5e-6);  // 443.14 us
}

TEST(CostModelByHand, QwenMoePrefillTouchesEveryExpertAndIsBoundByExpertFlops) {
  const auto& m = Catalog::builtin().model("qwen3-235b-a22b");
  const auto p = stack();
  const auto shard = whole(m);
  const engine::CostModel cost(m, m.quant("8bit"), m3_ultra(), p, shard);
  engine::StepShape s;
  s.tokens = 512;  // a 512-token prompt in one step
  s.sequences = 1;
  s.attended = 512 * 513 / 2.0;
  const double expert = 3 * 4096 * 1536.0, router = 4096 * 128.0;
  const double touched = 128 * (1 - std::pow(120.0 / 128, 512));                       // 128 less 6e-13: every expert
  const double memory_s = (touched * expert + router) * kBytesPerWeight / kBandwidth;  // 6.27 ms
  // 512 tokens x 8 experts x 2 FLOPs per expert weight at the expert rate: 22.9 ms.
  const double compute_s = 2 * 512 * router / kFlops + 2 * 512 * 8 * expert / kExpertFlops;
  ASSERT_GT(compute_s, memory_s);
  expect_close(cost.ffn_s(10, s), compute_s + 10e-6 + touched * 5e-6);
}

TEST(CostModelByHand, DeepSeekMlaAttentionReadsItsLatentProjectionsAndOnlyTheLatentCache) {
  // hidden 7168, 128 heads; q latent 1536, kv latent 512, rope 64, nope 128, v 128.
  const auto& m = Catalog::builtin().model("deepseek-v3.1");
  const auto p = stack();
  const auto shard = whole(m);
  const engine::CostModel cost(m, m.quant("8bit"), m3_ultra(), p, shard);
  // Per head: q up 1536 x 192, kv up 512 x (128 + 128), o 128 x 7168: 1,343,488; x 128 = 171,966,464.
  const double per_head = 1536 * 192.0 + 512 * 256.0 + 128 * 7168.0;
  // Shared by every head: q down 7168 x 1536, kv down 7168 x (512 + 64), norms 2 x 7168 + 1536 + 512.
  const double latent = 7168 * 1536.0 + 7168 * 576.0 + (2 * 7168 + 1536 + 512);  // 15,155,200
  const double weights = 128 * per_head + latent;                                // 187,121,664
  const double kv = 100 * (512 + 64) * 2.0;  // the latent and the rope key, 16-bit: 1,152 B a token
  const double memory_s = (weights * kBytesPerWeight + kv) / kBandwidth;                // 198,931,968 B: 485.79 us
  const double compute_s = (2 * weights + 100 * 128 * (2 * 192 + 2 * 128.0)) / kFlops;  // 28.3 us
  ASSERT_GT(memory_s, compute_s);
  expect_close(cost.attention_s(10, decode_after_100()), memory_s + 110e-6);  // 595.79 us
}

TEST(CostModelByHand, DeepSeekMoeDecodeAddsItsSharedExpertToTheEightRoutedOnes) {
  const auto& m = Catalog::builtin().model("deepseek-v3.1");  // 256 experts of 2048, 8 active, 1 shared
  const auto p = stack();
  const auto shard = whole(m);
  const engine::CostModel cost(m, m.quant("8bit"), m3_ultra(), p, shard);
  const double expert = 3 * 7168 * 2048.0;  // 44,040,192
  const double router = 7168 * 256.0;       // 1,835,008
  // 8 routed experts touched + the shared one, read in full.
  const double memory_s = ((8 + 1) * expert + router) * kBytesPerWeight / kBandwidth;  // 423,084,032 B: 1033.18 us
  const double compute_s = 2 * (expert + router) / kFlops + 2 * 8 * expert / kExpertFlops;
  ASSERT_GT(memory_s, compute_s);
  expect_close(cost.ffn_s(10, decode_after_100()), memory_s + 10e-6 + 8 * 5e-6);  // 1083.18 us
  // Layers 0-2 are dense (18432 wide): 3 x 7168 x 18432 weights, no experts.
  expect_close(cost.ffn_s(0, decode_after_100()), 3 * 7168 * 18432.0 * kBytesPerWeight / kBandwidth + 10e-6);
}

}  // namespace
