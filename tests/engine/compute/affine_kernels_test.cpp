// The packed-weight kernels against values packed here by hand, LSB first,
// and dequantized naively: f16, bf16 and f32 scales, 4 and 8 bits, and a
// block of columns that starts and ends inside groups (a tensor-parallel cut).
#include "engine/compute/affine_kernels.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using engine::cpu::AffineRows;
using engine::cpu::ScaleType;

// A [rows x in] matrix of `bits`-bit values with one scale and bias per group, in `type`.
struct Packed {
  std::vector<std::uint32_t> words;
  std::vector<unsigned char> scales, biases;
  std::vector<float> dense;   // scale·q + bias, as the kernels must see it
  std::vector<float> scaled;  // scale·q alone
  AffineRows rows;
};

// Scales exactly representable in all three types: k/64 for small k.
void put(std::vector<unsigned char>& out, float v, ScaleType type) {
  if (type == ScaleType::kF32) {
    const auto* p = reinterpret_cast<const unsigned char*>(&v);
    out.insert(out.end(), p, p + 4);
    return;
  }
  // f16 of k/64 (k < 2048): exponent and mantissa worked out directly; bf16: the top half of the float.
  std::uint16_t h;
  if (type == ScaleType::kBF16) {
    h = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v) >> 16);
  } else {
    const std::uint32_t f = std::bit_cast<std::uint32_t>(v);
    const int exp = static_cast<int>((f >> 23) & 0xff) - 127 + 15;
    h = v == 0 ? 0 : static_cast<std::uint16_t>((f >> 16 & 0x8000) | (exp << 10) | ((f >> 13) & 0x3ff));
  }
  out.push_back(static_cast<unsigned char>(h));
  out.push_back(static_cast<unsigned char>(h >> 8));
}

Packed pack(int rows, int in, int bits, int group, ScaleType type, unsigned seed) {
  std::mt19937 rng(seed);
  Packed p;
  const int per_word = 32 / bits;
  p.words.assign(static_cast<std::size_t>(rows) * in / per_word, 0);
  p.dense.resize(static_cast<std::size_t>(rows) * in);
  p.scaled.resize(p.dense.size());
  for (int r = 0; r < rows; ++r)
    for (int g = 0; g < in / group; ++g) {
      const float scale = static_cast<float>(1 + rng() % 63) / 64, bias = -static_cast<float>(rng() % 64) / 64;
      put(p.scales, scale, type);
      put(p.biases, bias, type);
      for (int i = 0; i < group; ++i) {
        const int j = g * group + i;
        const std::uint32_t q = rng() % (1u << bits);
        // Element j: word j / per_word, bits [(j % per_word)·bits, +bits).
        p.words[(static_cast<std::size_t>(r) * in + j) / per_word] |= q << ((j % per_word) * bits);
        p.dense[static_cast<std::size_t>(r) * in + j] = scale * static_cast<float>(q) + bias;
        p.scaled[static_cast<std::size_t>(r) * in + j] = scale * static_cast<float>(q);
      }
    }
  p.rows = {p.words.data(), p.scales.data(), p.biases.data(), type, bits, group, in / per_word, in / group};
  return p;
}

// A few rows of x (decode), and many on a matrix unit (prefill), are
// quantized to int8 per group (affine_dot.hpp): each x is off by at most half
// its group's step max|x|/127, which only the scale·q part multiplies (the
// bias takes the exact Σx). Many rows without one go through f32, closer.
TEST(AffineKernels, LinearAndRowMatchTheDequantizedMatrix) {
  const int rows = 5, in = 256;
  for (const int n : {3, engine::cpu::kManyRows})
    for (const int bits : {4, 8})
      for (const int group : {32, 64, 128})
        for (const ScaleType type : {ScaleType::kF32, ScaleType::kBF16, ScaleType::kF16}) {
          const Packed p = pack(rows, in, bits, group, type, bits * 1000 + group);
          // Columns [40, 40+150): starts and ends inside a group for every group size.
          const int col0 = 40, cols = 150;
          std::vector<float> x(static_cast<std::size_t>(n) * cols);
          std::mt19937 rng(7);
          for (float& v : x) v = static_cast<float>(static_cast<int>(rng() % 201) - 100) / 100;
          std::vector<float> y(static_cast<std::size_t>(n) * rows, 1.0f);
          engine::cpu::affine_linear(x, n, p.rows, rows, col0, cols, y, /*accumulate=*/true);
          for (int t = 0; t < n; ++t) {
            std::vector<double> step(in / group);  // half the quantization step of each group
            for (int i = 0; i < cols; ++i)
              step[(col0 + i) / group] =
                  std::max(step[(col0 + i) / group], std::fabs(double(x[t * cols + i])) / 127 / 2);
            for (int r = 0; r < rows; ++r) {
              double want = 1.0, bound = 1e-3;
              for (int i = 0; i < cols; ++i) {
                want += double(x[t * cols + i]) * p.dense[r * in + col0 + i];
                bound += step[(col0 + i) / group] * std::fabs(p.scaled[r * in + col0 + i]);
              }
              EXPECT_NEAR(y[t * rows + r], want, bound)
                  << n << " rows of x, " << bits << "-bit, groups of " << group << ", row " << r;
            }
          }
          std::vector<float> row(cols);
          engine::cpu::affine_row(p.rows, 3, col0, cols, row);
          for (int i = 0; i < cols; ++i) EXPECT_EQ(row[i], p.dense[3 * in + col0 + i]);
        }
}

}  // namespace
