// The inner kernels of affine_kernels.cpp, one small function per format
// (4 and 8 bits), scalar beside AVX2 (x86-64, with AVX-VNNI and AVX-512
// variants) and NEON (aarch64), as ggml's and MLX's quantized.cpp keep them. Every variant
// gives the same results bit for bit, so a run's tokens do not depend on the
// machine's vector unit:
// - a row dot takes x quantized to int8 per segment as ggml's Q8_0 quantizes
//   activations (quantize_segment), and sums q·xq in int32: exact, so in any
//   order; a tile dot (many rows of x on a matrix unit: prefill) gives each
//   row of x the row dot's result;
// - a dequantized value (an embedding lookup; many rows of x without a
//   matrix unit, then BLAS) is fma(scale, q, bias).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "engine/checkpoint/safetensors.hpp"
#include "engine/compute/affine_rows.hpp"

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

// x's values in one segment as int8, xq = round(x/d) with d = max|x|/127
// (zero for an all-zero segment), and Σxq. Rounded to nearest, ties to even,
// as nearbyint in the default mode: |x/d| <= 127, and adding then
// subtracting kRound = 1.5·2^23 leaves no fraction.
struct QuantizedSegment {
  float d;
  std::int32_t sum;
};
inline constexpr float kRound = 12582912.0f;
QuantizedSegment quantize_segment(const float* x, int n, std::int8_t* xq);
using Quantize = QuantizedSegment (*)(const float* x, int n, std::int8_t* xq);

// d, and the 1/d the values are multiplied by, for a segment whose largest |x| is amax.
struct Step {
  float d, inverse;
};
inline Step step_of(float amax) {
  const float d = amax / 127;
  return {d, d > 0 ? 1 / d : 0};
}

// A row of x as the row dots take it: per segment k, its values quantized
// (q, at the segment's offset), d[k] and q_sum[k] (QuantizedSegment), and
// x_sum[k] = Σx for the bias term.
struct QuantizedX {
  const std::int8_t* q;
  const float* d;
  const std::int32_t* q_sum;
  const float* x_sum;
};

// Rows [r0, r0+rows) of w against one row of x, into out[0, rows). Each
// segment's Σ q·xq is an exact int32 (|q·xq| <= 255·127, at most 128 elements),
// so kernels sum it in any order; segment k then adds, unfused,
// v = scale·(d·Σq·xq) + bias·Σx into lane k mod 8 of the row, in order (8 at a
// time in vectors), and the lanes are reduced as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
using RowDot = void (*)(const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs,
                        const QuantizedX& x, float* out);

// Lane k mod 8 += v for segments [k0, k0+n) (n <= 8, k0 a multiple of 8) of
// row r, whose integer dots are isum[0, n): the scalar form of the rule above.
inline void add_segments(const AffineRows& w, std::int64_t r, const Segment* segs, int k0, int n,
                         const std::int32_t* isum, const QuantizedX& x, float* lanes) {
  for (int j = 0; j < n; ++j) {
    const std::int64_t g = r * w.row_groups + segs[k0 + j].group;
    const float v = load_scale(w.scales, w.scale_type, g) * (x.d[k0 + j] * static_cast<float>(isum[j])) +
                    load_scale(w.biases, w.scale_type, g) * x.x_sum[k0 + j];
    lanes[j] = lanes[j] + v;
  }
}

// dot's rows [r0, r0+rows) into out, or added to what is there when
// `accumulate` (y + its result, one rounding, as a tile dot adds).
inline void dot_into(RowDot dot, const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs,
                     const QuantizedX& x, float* out, bool accumulate) {
  if (!accumulate) return dot(w, r0, rows, segs, x, out);
  thread_local std::vector<float> row;  // reused: a fresh one would be page-faulted in every time
  row.resize(rows);
  dot(w, r0, rows, segs, x, row.data());
  for (int i = 0; i < rows; ++i) out[i] += row[i];
}

inline float reduce_lanes(const float* l) { return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])); }

// Rows of x quantized as QuantizedX, for a product with many: row t's
// values at q + t·cols, its figures per segment at t·segments.
struct QuantizedRows {
  const std::int8_t* q;
  const float* d;
  const std::int32_t* q_sum;
  const float* x_sum;
  int n, cols, segments;
  // Nonzero: no other rows of x had it, so a tile dot may keep what it
  // prepares from them (their layout for a matrix unit) for the next piece of
  // the same product, rather than prepare it again.
  std::uint64_t serial = 0;
  QuantizedX row(int t) const {
    const std::size_t at = static_cast<std::size_t>(t) * segments;
    return {q + static_cast<std::size_t>(t) * cols, d + at, q_sum + at, x_sum + at};
  }
};

// Rows [r0, r0+rows) of w against every row t of x, into out[t·ld, +rows)
// (added to what is there when `accumulate`, one rounding as y + v):
// RowDot's result for each row of x, bit for bit, with each weight group
// loaded once for many rows of x. Only kernels with a matrix unit have one:
// the others' products of many rows dequantize for BLAS (a row dot per row of
// x ran at under half of OpenBLAS's sgemm there).
using TileDot = void (*)(const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs,
                         const QuantizedRows& x, float* out, std::int64_t ld, bool accumulate);

// out[i] = fma(scale, q[first + i], bias) for i < n.
using Dequant = void (*)(const void* row, std::int64_t first, int n, float scale, float bias, float* out);

struct AffineKernels {
  const char* isa;
  Quantize quantize;
  RowDot dot4, dot8;
  TileDot tile4, tile8;  // nullptr without a matrix unit
  Dequant dequant4, dequant8;
};

// The portable kernels, which the vector ones fall back on for what is left
// of a segment past its last whole vector, or dequantization that does not
// start and end on 8 elements.
const AffineKernels& scalar_kernels();
template <int Bits>
std::int32_t int_dot(const void* row, std::int64_t first, int n, const std::int8_t* xq);
template <int Bits>
void dequant_scalar(const void* row, std::int64_t first, int n, float scale, float bias, float* out);

// nullptr where the build or the machine lacks them.
const AffineKernels* avx2_kernels();
const AffineKernels* avxvnni_kernels();
const AffineKernels* avx512_kernels();
const AffineKernels* neon_kernels();
const AffineKernels* amx_kernels();

// The fastest kernels this machine runs (MESHINFER_KERNELS=scalar forces the portable ones).
const AffineKernels& best_kernels();

}  // namespace engine::cpu
