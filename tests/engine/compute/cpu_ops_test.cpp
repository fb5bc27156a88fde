// CpuBackend's kernels against their textbook definitions, written as naive loops here.
#include "engine/compute/cpu_ops.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

namespace {

namespace cpu = engine::cpu;

std::vector<float> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
  return v;
}

TEST(CpuOps, LinearIsXTimesWTransposed) {
  const int rows = 3, in = 5, out = 4;
  const auto x = random_vector(rows * in, 1), w = random_vector(out * in, 2);
  std::vector<float> y(rows * out, 1.0f);
  cpu::linear(x, rows, in, w.data(), out, y, /*accumulate=*/true);
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      double want = 1.0;
      for (int i = 0; i < in; ++i) want += double(x[r * in + i]) * w[o * in + i];
      EXPECT_NEAR(y[r * out + o], want, 1e-5);
    }
}

TEST(CpuOps, RmsNormDividesByRootMeanSquareTimesWeight) {
  const std::vector<float> x = {3, 4, 0, 0, 1, 1, 1, 1};
  const std::vector<float> w = {1, 2, 1, 1};
  std::vector<float> out(8);
  cpu::rms_norm(x, 2, 4, w, 0.0, out);
  EXPECT_NEAR(out[0], 3 / 2.5f, 1e-6);  // rms of (3, 4, 0, 0) is sqrt(25/4) = 2.5
  EXPECT_NEAR(out[1], 2 * 4 / 2.5f, 1e-6);
  EXPECT_NEAR(out[5], 2.0f, 1e-6);
}

// Rotates `x` as CpuBackend does at `position`: the default frequencies θ^(-2i/d), scaled by `scale`.
void rotate(std::vector<float>& x, int position, double theta, double scale = 1.0) {
  const int d = static_cast<int>(x.size());
  std::vector<double> inv(d / 2);
  for (int i = 0; i < d / 2; ++i) inv[i] = std::pow(theta, -2.0 * i / d);
  std::vector<float> cos(d / 2), sin(d / 2);
  cpu::rope_angles(position, inv, scale, cos, sin);
  cpu::rope(x, cos, sin);
}

TEST(CpuOps, RopeRotatesPairsByPositionTimesFrequency) {
  const double theta = 10000;
  const int d = 8;
  const auto original = random_vector(d, 3);
  auto x = original;
  rotate(x, 5, theta);
  for (int i = 0; i < d / 2; ++i) {
    const double angle = 5 * std::pow(theta, -2.0 * i / d);
    EXPECT_NEAR(x[i], original[i] * std::cos(angle) - original[i + d / 2] * std::sin(angle), 1e-5);
    EXPECT_NEAR(x[i + d / 2], original[i + d / 2] * std::cos(angle) + original[i] * std::sin(angle), 1e-5);
  }
  // What attention relies on: q·k depends only on the distance between positions.
  auto q1 = random_vector(d, 4), k1 = random_vector(d, 5), q2 = q1, k2 = k1;
  rotate(q1, 7, theta);
  rotate(k1, 3, theta);
  rotate(q2, 14, theta);
  rotate(k2, 10, theta);
  EXPECT_NEAR(std::inner_product(q1.begin(), q1.end(), k1.begin(), 0.0),
              std::inner_product(q2.begin(), q2.end(), k2.begin(), 0.0), 1e-5);
  // YaRN's attention factor scales cos and sin, so the vector's length.
  auto scaled = original;
  rotate(scaled, 5, theta, 1.5);
  for (int i = 0; i < d; ++i) EXPECT_NEAR(scaled[i], 1.5 * x[i], 1e-5);
}

// Rows of queries against one KV head: one row (sgemv), a token's heads
// (every row over the same positions) and a head's consecutive tokens (row r
// over one position more than row r-1, later positions weighing exactly 0).
TEST(CpuOps, AttendMatchesNaiveSoftmaxAttention) {
  const int d = 4, n = 6, stride = 3 * d;  // the head's columns inside rows of 3 heads
  const auto keys = random_vector((n + 4) * stride, 7), values = random_vector((n + 4) * stride, 8);
  for (const auto& [rows, causal] : {std::pair{1, 0}, {3, 0}, {5, 1}}) {
    const int ldq = 2 * d;  // query rows inside rows of 2 heads
    const auto q = random_vector(rows * ldq, 6 + rows);
    std::vector<float> out(rows * ldq, -7.0f);
    cpu::attend(q.data(), ldq, rows, n, causal, keys.data() + d, values.data() + d, stride, d, out.data(), ldq);
    for (int r = 0; r < rows; ++r) {
      const int seen = n + r * causal;
      std::vector<double> p(seen);
      double sum = 0;
      for (int j = 0; j < seen; ++j) {
        double s = 0;
        for (int i = 0; i < d; ++i) s += q[r * ldq + i] * keys[j * stride + d + i];
        sum += p[j] = std::exp(s / std::sqrt(double(d)));
      }
      for (int i = 0; i < d; ++i) {
        double want = 0;
        for (int j = 0; j < seen; ++j) want += p[j] / sum * values[j * stride + d + i];
        EXPECT_NEAR(out[r * ldq + i], want, 1e-5) << rows << " rows, causal " << causal << ", row " << r;
        EXPECT_EQ(out[r * ldq + d + i], -7.0f) << "written past the row's d values";
      }
    }
  }
}

TEST(CpuOps, RoutePicksTheTopExpertsAndRenormalises) {
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.5f, 2.0f};
  const auto picked = cpu::route(logits, 3, /*normalize=*/true);
  ASSERT_EQ(picked.size(), 3u);
  EXPECT_EQ(picked[0].first, 1);  // a tie goes to the lower index
  EXPECT_EQ(picked[1].first, 4);
  EXPECT_EQ(picked[2].first, 3);
  const double e2 = std::exp(2.0), e15 = std::exp(1.5);
  EXPECT_NEAR(picked[0].second, e2 / (2 * e2 + e15), 1e-6);
  EXPECT_NEAR(picked[2].second, e15 / (2 * e2 + e15), 1e-6);
  // Without renormalisation the weights are the softmax over every expert.
  double all = 0;
  for (float l : logits) all += std::exp(l);
  EXPECT_NEAR(cpu::route(logits, 2, false)[1].second, e2 / all, 1e-6);
}

TEST(CpuOps, SwigluIsSiluOfGateTimesUp) {
  std::vector<float> gate = {-2, 0, 1.5f};
  const std::vector<float> up = {3, 5, -2};
  cpu::swiglu(gate, up);
  for (int i = 0; i < 3; ++i) {
    const double g = std::vector<double>{-2, 0, 1.5}[i];
    EXPECT_NEAR(gate[i], g / (1 + std::exp(-g)) * up[i], 1e-6);
  }
}

}  // namespace
