// The inner kernels of affine_kernels.cpp, one small function per format
// (4 and 8 bits), scalar beside AVX2 (x86-64) and NEON (aarch64), as ggml's
// and MLX's quantized.cpp keep them. Every variant computes the same sums in
// the same order, so they agree bit for bit and a run's tokens do not depend
// on the machine's vector unit:
// - a dot of packed values with x keeps 8 lanes, lane l summing with fused
//   multiply-adds, in order, the products of the elements i ≡ l (mod 8) of
//   the segment;
// - a row's result adds each group's lanes times its scale into 8 row lanes
//   (fused), reduces them as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), and adds
//   Σ bias·Σx (fused, group by group);
// - a dequantized value is fma(scale, q, bias).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>

#include "engine/compute/affine_kernels.hpp"
#include "engine/compute/safetensors.hpp"

namespace engine::cpu {

inline constexpr int kLanes = 8;

// Columns of a product cut at group edges: a block of a tensor-parallel split
// need not start on one.
struct Segment {
  std::int64_t first;  // stored column
  int count, offset;   // elements, and where they start in x's row
  std::int64_t group;
};

inline float load_scale(const void* base, ScaleType type, std::int64_t i) {
  const auto* p = static_cast<const unsigned char*>(base);
  if (type == ScaleType::kF32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return type == ScaleType::kBF16 ? bf16_to_float(h) : half_to_float(h);
}

// Row r's packed words, at any alignment.
inline const unsigned char* row_bytes(const AffineRows& w, std::int64_t r) {
  return static_cast<const unsigned char*>(w.q) + r * w.row_words * 4;
}
inline std::uint32_t word_at(const void* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

template <int Bits>
inline std::uint32_t packed(const void* row, std::int64_t j) {
  constexpr int per_word = 32 / Bits;
  const std::uint32_t word = word_at(static_cast<const unsigned char*>(row) + 4 * (j / per_word));
  return (word >> ((j % per_word) * Bits)) & ((1u << Bits) - 1);
}

inline float reduce_lanes(const float* l) { return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])); }

// Rows [r0, r0+rows) of w (rows <= 4, computed side by side so that the
// vector units are not held up by one row's chain of additions) against one
// row of x (xsum: Σx per segment), as described above, into out[0, rows).
inline constexpr int kRowsAtOnce = 4;
using RowDot = void (*)(const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs, const float* x,
                        const float* xsum, float* out);
// out[i] = fma(scale, q[first + i], bias) for i < n.
using Dequant = void (*)(const void* row, std::int64_t first, int n, float scale, float bias, float* out);

struct AffineKernels {
  const char* isa;
  RowDot dot4, dot8;
  Dequant dequant4, dequant8;
};

// The portable kernels, which the vector ones fall back on for segments that
// do not start and end on 8 elements.
const AffineKernels& scalar_kernels();
template <int Bits>
void dot_lanes(const void* row, std::int64_t first, int n, const float* x, float* lanes);
template <int Bits>
void dequant_scalar(const void* row, std::int64_t first, int n, float scale, float bias, float* out);

// nullptr where the build or the machine lacks them.
const AffineKernels* avx2_kernels();
const AffineKernels* neon_kernels();

// The fastest kernels this machine runs (MESHINFER_KERNELS=scalar forces the portable ones).
const AffineKernels& best_kernels();

}  // namespace engine::cpu
