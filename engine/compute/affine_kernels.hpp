// MLX affine-quantized matrices computed from their packed words
// (docs/checkpoint-formats.md#mlx-packing): w[r, j] = scale[r, g]·q[r, j] + bias[r, g], g = j / group;
// q packed LSB first, word k of a row holding elements k·(32/bits) + i at
// shift i·bits. No weight is expanded in memory: a few rows of x (decode)
// are dotted with the packed words, Σ_g scale·d·(Σ q·xq) + bias·(Σ x) with x
// quantized to int8 per group as ggml's Q8_0 dots quantize it (integer dots:
// the f32 form was bound by converting every weight to float); many
// (prefill) too on a matrix unit (AMX: dequantizing for sgemm ran at a third
// of llama.cpp's Q8_0 prefill), else through BLAS one block of rows at a
// time, dequantized into a small buffer. The inner kernels, and their exact
// order of sums, are in affine_dot.hpp.
#pragma once

#include <cstdint>
#include <span>

#include "engine/compute/affine_rows.hpp"

namespace engine::cpu {

class ThreadPool;

// Inputs from which a product takes the tile dots, or without them
// dequantizes blocks of rows for BLAS, rather than one row dot per input row.
inline constexpr int kManyRows = 16;

// y[n x rows] (+)= x[n x cols] · Wᵀ, W the stored columns [col0, col0+cols) of
// `rows` rows, on `pool`'s threads (none: this thread alone; the result is the same).
void affine_linear(std::span<const float> x, int n, const AffineRows& w, int rows, std::int64_t col0, int cols,
                   std::span<float> y, bool accumulate, ThreadPool* pool = nullptr);

// One product of several of the same x: y[n x rows] (+)= x · Wᵀ.
struct AffineProduct {
  const AffineRows* w;
  int rows;
  std::span<float> y;
  bool accumulate;
};

// Products of one x (q, k and v; gate and up), each over the stored columns
// [col0, col0+cols): x prepared once for all of them, and their pieces in one
// job on `pool`. Each product's result is what it would be alone.
// REQUIRES: every matrix has the same group size.
void affine_linear(std::span<const float> x, int n, std::int64_t col0, int cols,
                   std::span<const AffineProduct> products, ThreadPool* pool = nullptr);

// Stored row r, columns [col0, col0+cols), as floats (an embedding lookup).
void affine_row(const AffineRows& w, std::int64_t r, std::int64_t col0, int cols, std::span<float> out);

// The vector unit the kernels use here: "amx", "avx512-vnni", "avx-vnni", "avx2", "neon" or "scalar".
const char* affine_kernel_isa();

}  // namespace engine::cpu
