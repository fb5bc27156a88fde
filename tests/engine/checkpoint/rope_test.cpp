// RoPE's inverse frequencies for each scaling type, against values written
// here from the formulas of docs/checkpoint-formats.md#rope-scaling in another form: per band in closed form,
// with the band edges worked out by hand for real checkpoints' parameters.
#include "engine/checkpoint/rope.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace {

using engine::RopeScaling;
constexpr double kPi = std::numbers::pi;

// θ^(-2i/d) as e^(-(2i/d)·ln θ).
double base(double theta, int i, int d) { return std::exp(-(2.0 * i / d) * std::log(theta)); }

TEST(Rope, DefaultAndLinear) {
  RopeScaling r;
  r.theta = 10000;
  const auto inv = engine::rope_inv_freq(r, 64);
  ASSERT_EQ(inv.size(), 32u);
  EXPECT_DOUBLE_EQ(inv[0], 1.0);
  EXPECT_NEAR(inv[16], 0.01, 1e-15);  // 10000^(-1/2)
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(inv[i], base(10000, i, 64), 1e-15 * inv[0]);
  r.type = "linear";
  r.factor = 4;
  const auto linear = engine::rope_inv_freq(r, 64);
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(linear[i], base(10000, i, 64) / 4, 1e-16);
  EXPECT_EQ(engine::rope_attention_factor(r), 1.0);
}

// Llama 3.1 8B: θ 500000, factor 8, low 1, high 4, original context 8192, head 128.
// Wavelength 2π·θ^(2i/d) is below 8192/4 for i < 128·ln(8192/(8π))/(2·ln 500000) = 28.24
// and above 8192/1 for i > 128·ln(8192/(2π))/(2·ln 500000) = 34.97.
TEST(Rope, Llama3KeepsShortWavelengthsDividesLongOnesAndBlendsBetween) {
  RopeScaling r;
  r.type = "llama3";
  r.theta = 500000;
  r.factor = 8;
  r.low_freq_factor = 1;
  r.high_freq_factor = 4;
  r.original_max_position = 8192;
  const auto inv = engine::rope_inv_freq(r, 128);
  ASSERT_EQ(inv.size(), 64u);
  for (int i = 0; i <= 28; ++i) EXPECT_NEAR(inv[i], base(500000, i, 128), 1e-15) << i;
  for (int i = 35; i < 64; ++i) EXPECT_NEAR(inv[i], base(500000, i, 128) / 8, 1e-18) << i;
  // Between: the frequency times (1/8 + 7/8·s), s = (8192/wavelength - 1)/(4 - 1).
  for (int i = 29; i <= 34; ++i) {
    const double f = base(500000, i, 128), s = (8192 * f / (2 * kPi) - 1) / 3;
    EXPECT_GT(s, 0);
    EXPECT_LT(s, 1);
    EXPECT_NEAR(inv[i], f * (1.0 / 8 + 7.0 / 8 * s), 1e-15) << i;
  }
  EXPECT_EQ(engine::rope_attention_factor(r), 1.0);
}

// Qwen3 with YaRN: θ 10^6, factor 4, original context 32768, head 128.
// Correction range: 128·ln(32768/(2π·32))/(2·ln 10^6) = 23.60 → 23 and
// 128·ln(32768/(2π·1))/(2·ln 10^6) = 39.65 → 40.
TEST(Rope, YarnExtrapolatesFastPairsInterpolatesSlowOnesWithARamp) {
  RopeScaling r;
  r.type = "yarn";
  r.theta = 1e6;
  r.factor = 4;
  r.original_max_position = 32768;
  const auto inv = engine::rope_inv_freq(r, 128);
  for (int i = 0; i < 64; ++i) {
    const double f = base(1e6, i, 128);
    const double interpolated = i <= 23 ? 0 : i >= 40 ? 1 : (i - 23) / 17.0;
    EXPECT_NEAR(inv[i], f * (1 - interpolated) + f / 4 * interpolated, 1e-15) << i;
  }
  EXPECT_NEAR(engine::rope_attention_factor(r), 1 + 0.1 * std::log(4.0), 1e-15);
  // Without truncation the edges stay fractional.
  r.truncate = false;
  const auto exact = engine::rope_inv_freq(r, 128);
  const double low = 128 * std::log(32768 / (64 * kPi)) / (2 * std::log(1e6));
  const double high = 128 * std::log(32768 / (2 * kPi)) / (2 * std::log(1e6));
  for (int i : {23, 24, 30, 39, 40}) {
    const double ramp = std::min(1.0, std::max(0.0, (i - low) / (high - low))), f = base(1e6, i, 128);
    EXPECT_NEAR(exact[i], f * (1 - ramp) + f / 4 * ramp, 1e-15) << i;
  }
}

TEST(Rope, YarnAttentionFactorGivenOrFromMscale) {
  RopeScaling r;
  r.type = "yarn";
  r.factor = 40;
  r.original_max_position = 4096;
  r.mscale = 1;
  r.mscale_all_dim = 1;  // DeepSeek-V3: the two cancel
  EXPECT_DOUBLE_EQ(engine::rope_attention_factor(r), 1.0);
  r.mscale_all_dim = 0.707;
  EXPECT_NEAR(engine::rope_attention_factor(r), (1 + 0.1 * std::log(40.0)) / (1 + 0.0707 * std::log(40.0)), 1e-15);
  r.mscale_all_dim = 0;  // one of them absent: the plain 0.1·ln(factor) + 1
  EXPECT_NEAR(engine::rope_attention_factor(r), 1 + 0.1 * std::log(40.0), 1e-15);
  r.attention_factor = 0.5;
  EXPECT_EQ(engine::rope_attention_factor(r), 0.5);
  r.attention_factor.reset();
  r.factor = 1;  // no stretch, no scaling
  EXPECT_EQ(engine::rope_attention_factor(r), 1.0);
}

}  // namespace
