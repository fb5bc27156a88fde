// The kernel cost model against times worked out by hand from the cards (the
// figures in the comments are the arithmetic): one attention and one MoE layer
// of Qwen3-235B (GQA, no shared expert) and DeepSeek-V3.1 (MLA, one shared
// expert) on one M3 Ultra, with a stack of round numbers.
#include "engine/plan/cost_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/cards/catalog.hpp"

namespace {

using engine::Catalog;

// Round numbers, so every figure below can be checked on paper.
engine::StackProfile stack() {
  engine::StackProfile p;
  p.memory_bandwidth_efficiency = 0.5;  // 819 GB/s (hardware card) -> 409.5 GB/s
  p.compute_efficiency = 0.5;           // 27 TFLOP/s (hardware card) -> 13.5 TFLOP/s
  p.expert_compute_efficiency = 0.25;   // routed-expert matmuls: 6.75 TFLOP/s
  p.per_kernel_overhead_s = 10e-6;      // every kernel
  p.per_expert_overhead_s = 5e-6;       // per routed expert an expert kernel reads
  return p;
}

constexpr double kBandwidth = 409.5e9;       // bytes/s
constexpr double kBytesPerWeight = 8.5 / 8;  // "8bit": 8.5 bits a weight with its group scales
constexpr double kDispatch = 10e-6;

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

// A kernel bound by memory: its bytes at the stack's bandwidth, plus its dispatch.
double streamed(double bytes) { return bytes / kBandwidth + kDispatch; }

void expect_close(double actual, double expected) { EXPECT_NEAR(actual, expected, expected * 1e-9); }

TEST(CostModelByHand, QwenGqaAttentionIsEightKernelsOfWeightsAndCache) {
  const auto& m = Catalog::builtin().model("qwen3-235b-a22b");  // hidden 4096, 64 heads, 4 KV heads of 128
  const auto p = stack();
  const auto shard = whole(m);
  const engine::CostModel cost(m, m.quant("8bit"), m3_ultra(), p, shard);
  const double norm = (2 * 4096 + 4096) * 2.0;                           // the token in and out, 16-bit weights
  const double q = 4096 * 8192 * kBytesPerWeight + (4096 + 8192) * 2.0;  // weights, activation in and out
  const double kv = 4096 * 512 * kBytesPerWeight + (4096 + 512) * 2.0;   // K, and V the same
  const double rope = 2 * (64 + 4) * 128 * 2.0;                          // q and k heads in and out
  // Cached K and V of 100 tokens (4 heads of 128, 16-bit), the query in and the output out: 237,568 bytes, 0.58 us,
  // against 64 x 128 x 4 FLOPs x 100 = 3.3 MFLOP, 0.24 us at 13.5 TFLOP/s.
  const double attention = 100 * (2 * 4 * 128 * 2.0) + 64 * 256 * 2.0;
  const double o = 8192 * 4096 * kBytesPerWeight + (8192 + 4096) * 2.0;
  const double add = 3 * 4096 * 2.0;
  const double expected = streamed(norm) + streamed(q) + 2 * streamed(kv) + streamed(rope) + streamed(attention) +
                          streamed(o) + streamed(add);
  const engine::OpTime t = cost.attention(10, decode_after_100());
  expect_close(t.seconds, expected);  // 266.0 us: 186 of bytes, 80 of dispatch
  // What the report splits a token by: every decode kernel is bound by its bytes.
  expect_close(t.dispatch_s, 8 * kDispatch);
  expect_close(t.memory_s, expected - 8 * kDispatch);
  EXPECT_EQ(t.arithmetic_s, 0);
  expect_close(t.floor_s, t.memory_s * p.memory_bandwidth_efficiency);  // the same bytes at the card's full bandwidth
}

TEST(CostModelByHand, QwenAttentionOnHalfTheHeadsReadsHalfTheWeightsButPaysEveryDispatch) {
  const auto& m = Catalog::builtin().model("qwen3-235b-a22b");
  const auto p = stack();
  auto shard = whole(m);
  shard.heads = 32;  // tensor parallel over 2 nodes
  shard.kv_heads = 2;
  const engine::CostModel cost(m, m.quant("8bit"), m3_ultra(), p, shard);
  const double norm = (2 * 4096 + 4096) * 2.0;  // norms are replicated
  const double q = 4096 * 4096 * kBytesPerWeight + (4096 + 4096) * 2.0;
  const double kv = 4096 * 256 * kBytesPerWeight + (4096 + 256) * 2.0;
  const double rope = 2 * (32 + 2) * 128 * 2.0;
  const double attention = 100 * (2 * 2 * 128 * 2.0) + 32 * 256 * 2.0;
  const double add = 3 * 4096 * 2.0;
  const double expected =
      streamed(norm) + 2 * streamed(q) + 2 * streamed(kv) + streamed(rope) + streamed(attention) + streamed(add);
  expect_close(cost.attention(10, decode_after_100()).seconds, expected);
}

TEST(CostModelByHand, QwenMoeReadsTheEightRoutedExpertsAndPaysForEach) {
  const auto& m = Catalog::builtin().model("qwen3-235b-a22b");  // 128 experts of 1536, 8 active, none shared
  const auto p = stack();
  const auto shard = whole(m);
  const engine::CostModel cost(m, m.quant("8bit"), m3_ultra(), p, shard);
  const double norm = (2 * 4096 + 4096) * 2.0;
  const double router = 4096 * 128 * kBytesPerWeight + (4096 + 128) * 2.0;
  const double top_k = 2 * 128 * 2.0;
  // One token touches 128 x (1 - (1 - 8/128)^1) = 8 experts: gate, up and down each read 8 matrices of
  // 4096 x 1536 for 8 token-expert pairs (130.6 us against 14.9 us of FLOPs at 6.75 TFLOP/s).
  const double expert = 8 * 4096 * 1536 * kBytesPerWeight + 8 * (4096 + 1536) * 2.0;
  const double swiglu = 3 * 8 * 1536 * 2.0;
  const double combine = (8 + 1) * 4096 * 2.0;
  const double add = 3 * 4096 * 2.0;
  const double per_experts = 8 * 5e-6;  // each expert kernel pays per expert it reads
  const double expected = streamed(norm) + streamed(router) + streamed(top_k) + 3 * (streamed(expert) + per_experts) +
                          streamed(swiglu) + streamed(combine) + streamed(add);
  expect_close(cost.ffn(10, decode_after_100()).seconds, expected);  // 604.3 us
}

TEST(CostModelByHand, QwenMoePrefillTouchesEveryExpertAndIsBoundByTheExpertFlopRate) {
  const auto& m = Catalog::builtin().model("qwen3-235b-a22b");
  const auto p = stack();
  const auto shard = whole(m);
  const engine::CostModel cost(m, m.quant("8bit"), m3_ultra(), p, shard);
  engine::StepShape s;
  s.tokens = 512;  // a 512-token prompt in one step
  s.sequences = 1;
  const double touched = 128 * (1 - std::pow(120.0 / 128, 512));  // every expert, less 6e-13
  // Each expert kernel: 512 x 8 = 4,096 token-expert pairs x 2 x 4096 x 1536 FLOPs = 51.5 GFLOP at 6.75 TFLOP/s,
  // 7.6 ms, against 128 matrices of 4096 x 1536 (856 MB, 2.1 ms).
  const double expert_s = std::max((touched * 4096 * 1536 * kBytesPerWeight + 4096 * (4096 + 1536) * 2.0) / kBandwidth,
                                   2 * 4096 * 4096 * 1536.0 / 6.75e12);
  EXPECT_DOUBLE_EQ(expert_s, 2 * 4096 * 4096 * 1536.0 / 6.75e12);
  const double router_s =
      std::max((4096 * 128 * kBytesPerWeight + 512 * (4096 + 128) * 2.0) / kBandwidth, 2 * 512 * 4096 * 128 / 13.5e12);
  const double elementwise_bytes = (2 * 512 * 4096 + 4096) * 2.0  // norm
                                   + 2 * 512 * 128 * 2.0          // top-k
                                   + 3 * 4096 * 1536 * 2.0        // swiglu over 4,096 pairs
                                   + (4096 + 512) * 4096 * 2.0    // combine
                                   + 3 * 512 * 4096 * 2.0;        // residual add
  const double expected = 3 * (expert_s + kDispatch + touched * 5e-6) + router_s + kDispatch +
                          elementwise_bytes / kBandwidth + 5 * kDispatch;
  const engine::OpTime t = cost.ffn(10, s);
  expect_close(t.seconds, expected);
  // The report's split: the expert kernels under arithmetic, at the card's full peak in the floor.
  expect_close(t.arithmetic_s, 3 * expert_s + router_s);
  expect_close(t.dispatch_s, 9 * kDispatch + 3 * touched * 5e-6);
  expect_close(t.floor_s, 3 * expert_s * p.expert_compute_efficiency + router_s * p.compute_efficiency +
                              elementwise_bytes / kBandwidth * p.memory_bandwidth_efficiency);
}

TEST(CostModelByHand, DeepSeekMlaAttentionGoesThroughItsLatentsAndReadsOnlyTheLatentCache) {
  // hidden 7168, 128 heads; q latent 1536, kv latent 512, rope 64, nope 128, v 128
  const auto& m = Catalog::builtin().model("deepseek-v3.1");
  const auto p = stack();
  const auto shard = whole(m);
  const engine::CostModel cost(m, m.quant("8bit"), m3_ultra(), p, shard);
  const double norm = (2 * 7168 + 7168) * 2.0;
  const double q_down = 7168 * 1536 * kBytesPerWeight + (7168 + 1536) * 2.0;
  const double q_norm = (2 * 1536 + 1536) * 2.0;
  const double q_up = 1536 * (128 * 192) * kBytesPerWeight + (1536 + 128 * 192) * 2.0;
  const double kv_down = 7168 * 576 * kBytesPerWeight + (7168 + 576) * 2.0;
  const double kv_norm = (2 * 512 + 512) * 2.0;
  const double kv_up = 512 * (128 * 256) * kBytesPerWeight + (512 + 128 * 256) * 2.0;
  const double rope = 2 * (128 + 1) * 64 * 2.0;
  // 100 cached latents of 576 16-bit values (0.48 us with the query and output) against 128 heads x (2 x 192 +
  // 2 x 128) FLOPs per cached token (8.2 MFLOP, 0.61 us): bound by FLOPs.
  const double attention =
      std::max((100 * 576 * 2.0 + 128 * 320 * 2.0) / kBandwidth, 100 * 128 * (2 * 192 + 2 * 128) / 13.5e12) + kDispatch;
  const double o = 128 * 128 * 7168 * kBytesPerWeight + (128 * 128 + 7168) * 2.0;
  const double add = 3 * 7168 * 2.0;
  const double expected = streamed(norm) + streamed(q_down) + streamed(q_norm) + streamed(q_up) + streamed(kv_down) +
                          streamed(kv_norm) + streamed(kv_up) + streamed(rope) + attention + streamed(o) +
                          streamed(add);
  expect_close(cost.attention(10, decode_after_100()).seconds, expected);  // 596.9 us
}

TEST(CostModelByHand, DeepSeekMoeAddsItsSharedExpertAsDenseKernels) {
  const auto& m = Catalog::builtin().model("deepseek-v3.1");  // 256 experts of 2048, 8 active, 1 shared
  const auto p = stack();
  const auto shard = whole(m);
  const engine::CostModel cost(m, m.quant("8bit"), m3_ultra(), p, shard);
  const double norm = (2 * 7168 + 7168) * 2.0;
  const double router = 7168 * 256 * kBytesPerWeight + (7168 + 256) * 2.0;
  const double top_k = 2 * 256 * 2.0;
  const double expert = 8 * 7168 * 2048 * kBytesPerWeight + 8 * (7168 + 2048) * 2.0;
  const double swiglu = 3 * 8 * 2048 * 2.0;
  const double shared = 7168 * 2048 * kBytesPerWeight + (7168 + 2048) * 2.0;  // gate, up and down alike
  const double shared_swiglu = 3 * 2048 * 2.0;
  const double combine = (8 + 1) * 7168 * 2.0;
  const double add = 3 * 7168 * 2.0;
  const double expected = streamed(norm) + streamed(router) + streamed(top_k) + 3 * (streamed(expert) + 8 * 5e-6) +
                          streamed(swiglu) + 3 * streamed(shared) + streamed(shared_swiglu) + streamed(combine) +
                          streamed(add);
  expect_close(cost.ffn(10, decode_after_100()).seconds, expected);  // 1285.2 us
}

// Kimi K2.6's mixed quant: 8.5 bits for the 11.7B weights outside the routed experts leaves the 1,014.7B
// routed-expert weights (60 MoE layers x 384 x 3 x 7168 x 2048) (3.578 x 1,026.4B - 8.5 x 11.7B) / 1,014.7B
// = 3.521 bits: one token's 8 experts of a layer read that, its shared expert 8.5 bits.
TEST(CostModelByHand, KimiMixedQuantReadsTheRoutedExpertsAtTheBitsTheDenseWeightsLeave) {
  const auto& m = Catalog::builtin().model("kimi-k2.6");
  const auto p = stack();
  const auto shard = whole(m);
  const engine::CostModel cost(m, m.quant("mlx-mixed-3.578bpw"), m3_ultra(), p, shard);
  const engine::CostModel eight(m, engine::Quantization{"8.5", 8.5}, m3_ultra(), p, shard);
  // Only the three routed-expert kernels differ: 8 x 7168 x 2048 weights each, at 3.521 bits against 8.5.
  const double saved = 3 * 8 * 7168 * 2048.0 * (8.5 - 3.5211) / 8 / kBandwidth;
  EXPECT_NEAR(eight.ffn(10, decode_after_100()).seconds - cost.ffn(10, decode_after_100()).seconds, saved, saved * 1e-4);
  expect_close(cost.attention(10, decode_after_100()).seconds, eight.attention(10, decode_after_100()).seconds);
}

}  // namespace
