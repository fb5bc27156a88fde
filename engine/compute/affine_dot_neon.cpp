// NEON kernels (affine_dot.hpp): the 8 lanes as two float32x4 halves, lanes
// 0-3 and 4-7. Every aarch64 core has NEON and fused multiply-add.
#include "engine/compute/affine_dot.hpp"

#if defined(__ARM_NEON) && defined(__aarch64__)
#include <arm_neon.h>

namespace engine::cpu {

namespace {

struct Half2 {
  float32x4_t lo, hi;
};

// Elements j..j+7 of a packed row (j a multiple of 8) as floats.
template <int Bits>
inline Half2 values8(const unsigned char* row, std::int64_t j) {
  if constexpr (Bits == 4) {
    const uint32x4_t word = vdupq_n_u32(word_at(row + j / 2)), mask = vdupq_n_u32(0xF);
    static const int32_t lo_shift[4] = {0, -4, -8, -12}, hi_shift[4] = {-16, -20, -24, -28};  // negative: right
    return {vcvtq_f32_u32(vandq_u32(vshlq_u32(word, vld1q_s32(lo_shift)), mask)),
            vcvtq_f32_u32(vandq_u32(vshlq_u32(word, vld1q_s32(hi_shift)), mask))};
  } else {
    const uint16x8_t v = vmovl_u8(vld1_u8(row + j));
    return {vcvtq_f32_u32(vmovl_u16(vget_low_u16(v))), vcvtq_f32_u32(vmovl_u16(vget_high_u16(v)))};
  }
}

template <int Bits, int R>
void rows_dot(const AffineRows& w, std::int64_t r0, std::span<const Segment> segs, const float* x, const float* xsum,
              float* out) {
  Half2 acc[R];
  float bias_sum[R];
  #pragma GCC unroll 4
  for (int i = 0; i < R; ++i) acc[i] = {vdupq_n_f32(0), vdupq_n_f32(0)}, bias_sum[i] = 0;
  for (std::size_t k = 0; k < segs.size(); ++k) {
    const Segment& s = segs[k];
    const float* xs = x + s.offset;
    Half2 lanes[R];
    if (s.first % kLanes == 0 && s.count % kLanes == 0) {
      #pragma GCC unroll 4
      for (int i = 0; i < R; ++i) lanes[i] = {vdupq_n_f32(0), vdupq_n_f32(0)};
      for (int e = 0; e < s.count; e += kLanes) {
        const float32x4_t xlo = vld1q_f32(xs + e), xhi = vld1q_f32(xs + e + 4);
        #pragma GCC unroll 4
        for (int i = 0; i < R; ++i) {
          const Half2 q = values8<Bits>(row_bytes(w, r0 + i), s.first + e);
          lanes[i] = {vfmaq_f32(lanes[i].lo, q.lo, xlo), vfmaq_f32(lanes[i].hi, q.hi, xhi)};
        }
      }
    } else {
      #pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        float l[kLanes] = {};
        dot_lanes<Bits>(row_bytes(w, r0 + i), s.first, s.count, xs, l);
        lanes[i] = {vld1q_f32(l), vld1q_f32(l + 4)};
      }
    }
    #pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      const std::int64_t g = (r0 + i) * w.row_groups + s.group;
      const float32x4_t scale = vdupq_n_f32(load_scale(w.scales, w.scale_type, g));
      acc[i] = {vfmaq_f32(acc[i].lo, scale, lanes[i].lo), vfmaq_f32(acc[i].hi, scale, lanes[i].hi)};
      bias_sum[i] = std::fma(load_scale(w.biases, w.scale_type, g), xsum[k], bias_sum[i]);
    }
  }
  #pragma GCC unroll 4
  for (int i = 0; i < R; ++i) {
    float l[kLanes];
    vst1q_f32(l, acc[i].lo);
    vst1q_f32(l + 4, acc[i].hi);
    out[i] = reduce_lanes(l) + bias_sum[i];
  }
}

template <int Bits>
void row_dot(const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs, const float* x,
             const float* xsum, float* out) {
  int i = 0;
  for (; i + kRowsAtOnce <= rows; i += kRowsAtOnce) rows_dot<Bits, kRowsAtOnce>(w, r0 + i, segs, x, xsum, out + i);
  for (; i < rows; ++i) rows_dot<Bits, 1>(w, r0 + i, segs, x, xsum, out + i);
}

template <int Bits>
void dequant(const void* row, std::int64_t first, int n, float scale, float bias, float* out) {
  if (first % kLanes != 0 || n % kLanes != 0) return dequant_scalar<Bits>(row, first, n, scale, bias, out);
  const float32x4_t s = vdupq_n_f32(scale), b = vdupq_n_f32(bias);
  for (int e = 0; e < n; e += kLanes) {
    const Half2 q = values8<Bits>(static_cast<const unsigned char*>(row), first + e);
    vst1q_f32(out + e, vfmaq_f32(b, s, q.lo));
    vst1q_f32(out + e + 4, vfmaq_f32(b, s, q.hi));
  }
}

}  // namespace

const AffineKernels* neon_kernels() {
  static const AffineKernels k{"neon", row_dot<4>, row_dot<8>, dequant<4>, dequant<8>};
  return &k;
}

}  // namespace engine::cpu

#else

namespace engine::cpu {
const AffineKernels* neon_kernels() { return nullptr; }
}  // namespace engine::cpu

#endif
