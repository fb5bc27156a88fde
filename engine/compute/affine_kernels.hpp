// MLX affine-quantized matrices computed from their packed words (FORMATS.md
// section 2.2): w[r, j] = scale[r, g]·q[r, j] + bias[r, g], g = j / group;
// q packed LSB first, word k of a row holding elements k·(32/bits) + i at
// shift i·bits. A product is Σ_g scale·(Σ q·x) + bias·(Σ x): per group, one
// small dot of the packed values per width; no weight is expanded in memory.
#pragma once

#include <cstdint>
#include <span>

namespace engine::cpu {

enum class ScaleType { kF32, kBF16, kF16 };

// Rows of a stored quantized matrix: row r's words start at q + r·row_words,
// its scales and biases at element r·row_groups.
struct AffineRows {
  const std::uint32_t* q = nullptr;
  const void* scales = nullptr;
  const void* biases = nullptr;
  ScaleType scale_type = ScaleType::kBF16;
  int bits = 4, group = 64;
  std::int64_t row_words = 0, row_groups = 0;
};

// Σ_i x[i]·q[first + i] over n elements of one packed row.
float dot_q4(const std::uint32_t* row, std::int64_t first, int n, const float* x);
float dot_q8(const std::uint32_t* row, std::int64_t first, int n, const float* x);

// y[n x rows] (+)= x[n x cols] · Wᵀ, W the stored columns [col0, col0+cols) of `rows` rows.
void affine_linear(std::span<const float> x, int n, const AffineRows& w, int rows, std::int64_t col0, int cols,
                   std::span<float> y, bool accumulate);

// Stored row r, columns [col0, col0+cols), as floats (an embedding lookup).
void affine_row(const AffineRows& w, std::int64_t r, std::int64_t col0, int cols, std::span<float> out);

}  // namespace engine::cpu
