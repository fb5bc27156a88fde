// A stored MLX affine-quantized matrix as the kernels read it: its packed
// words, scales and biases in place (docs/checkpoint-formats.md#mlx-packing).
// What the products over it are is affine_kernels.hpp's; the inner row and
// tile dots are affine_dot.hpp's.
#pragma once

#include <cstdint>

namespace engine::cpu {

enum class ScaleType { kF32, kBF16, kF16 };

// Rows of a stored quantized matrix: row r's words start at byte 4·r·row_words
// of q, its scales and biases at element r·row_groups. None need be aligned:
// MLX's writer does not align tensors, and the kernels read them in place.
struct AffineRows {
  const void* q = nullptr;
  const void* scales = nullptr;
  const void* biases = nullptr;
  ScaleType scale_type = ScaleType::kBF16;
  int bits = 4, group = 64;
  std::int64_t row_words = 0, row_groups = 0;
};

}  // namespace engine::cpu
