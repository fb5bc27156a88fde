// NEON kernels (affine_dot.hpp): the 8 lanes as two float32x4 halves, lanes
// 0-3 and 4-7; integer dots on widening multiplies (every aarch64 core has
// them; the dot-product extension is not assumed).
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

// Elements j..j+15 of a packed row (j even for 4 bits) as 16 bytes, in order.
template <int Bits>
inline uint8x16_t values16(const unsigned char* row, std::int64_t j) {
  if constexpr (Bits == 8) {
    return vld1q_u8(row + j);
  } else {
    // Byte i holds elements 2i (low nibble) and 2i+1.
    const uint8x8_t v = vld1_u8(row + j / 2);
    const uint8x8x2_t z = vzip_u8(vand_u8(v, vdup_n_u8(0xF)), vshr_n_u8(v, 4));
    return vcombine_u8(z.val[0], z.val[1]);
  }
}

// Σ q·xq over segment s of a row (q_sum: the segment's Σxq): whole vectors of
// 16, then the rest by the scalar kernel. 8-bit q is made signed as q-128
// (products of at most 128·127, two to an int16 lane), and 128·Σx added back.
template <int Bits>
std::int32_t segment_dot(const unsigned char* row, const Segment& s, const std::int8_t* xq, std::int32_t q_sum) {
  const std::int8_t* x = xq + s.offset;
  const int whole = Bits == 4 && s.first % 2 != 0 ? 0 : s.count / 16 * 16;
  int32x4_t acc = vdupq_n_s32(0);
  for (int e = 0; e < whole; e += 16) {
    uint8x16_t q = values16<Bits>(row, s.first + e);
    if constexpr (Bits == 8) q = veorq_u8(q, vdupq_n_u8(0x80));
    const int8x16_t qs = vreinterpretq_s8_u8(q), xs = vld1q_s8(x + e);
    const int16x8_t p = vmlal_s8(vmull_s8(vget_low_s8(qs), vget_low_s8(xs)), vget_high_s8(qs), vget_high_s8(xs));
    acc = vpadalq_s16(acc, p);
  }
  std::int32_t sum = vaddvq_s32(acc);
  if (whole < s.count) {
    sum += int_dot<Bits>(row, s.first + whole, s.count - whole, x + whole);
    for (int i = whole; i < s.count; ++i) q_sum -= x[i];  // leaves Σx of the vector part
  }
  return Bits == 8 ? sum + 128 * q_sum : sum;
}

// One row at a time; its segments 8 at a time, their v (affine_dot.hpp) in
// two vectors added to the row's lanes 0-3 and 4-7.
template <int Bits>
void row_dot(const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs, const QuantizedX& x,
             float* out) {
  const int n = static_cast<int>(segs.size());
  for (std::int64_t r = r0; r < r0 + rows; ++r) {
    const unsigned char* row = row_bytes(w, r);
    Half2 lanes = {vdupq_n_f32(0), vdupq_n_f32(0)};
    for (int k0 = 0; k0 < n; k0 += kLanes) {
      std::int32_t isum[kLanes];
      const int m = std::min(kLanes, n - k0);
      for (int j = 0; j < m; ++j) isum[j] = segment_dot<Bits>(row, segs[k0 + j], x.q, x.q_sum[k0 + j]);
      if (m < kLanes) {
        float l[kLanes];
        vst1q_f32(l, lanes.lo);
        vst1q_f32(l + 4, lanes.hi);
        add_segments(w, r, segs.data(), k0, m, isum, x, l);
        lanes = {vld1q_f32(l), vld1q_f32(l + 4)};
        break;
      }
      float scale[kLanes], bias[kLanes];
      for (int j = 0; j < kLanes; ++j) {
        const std::int64_t g = r * w.row_groups + segs[k0 + j].group;
        scale[j] = load_scale(w.scales, w.scale_type, g);
        bias[j] = load_scale(w.biases, w.scale_type, g);
      }
      for (int h = 0; h < 2; ++h) {
        const float32x4_t dq = vmulq_f32(vld1q_f32(x.d + k0 + 4 * h), vcvtq_f32_s32(vld1q_s32(isum + 4 * h)));
        const float32x4_t v = vaddq_f32(vmulq_f32(vld1q_f32(scale + 4 * h), dq),
                                        vmulq_f32(vld1q_f32(bias + 4 * h), vld1q_f32(x.x_sum + k0 + 4 * h)));
        (h ? lanes.hi : lanes.lo) = vaddq_f32(h ? lanes.hi : lanes.lo, v);
      }
    }
    float l[kLanes];
    vst1q_f32(l, lanes.lo);
    vst1q_f32(l + 4, lanes.hi);
    out[r - r0] = reduce_lanes(l);
  }
}

// quantize_segment 8 values at a time: the same maximum and the same rounding of each value.
QuantizedSegment quantize(const float* x, int n, std::int8_t* xq) {
  if (n % kLanes != 0) return quantize_segment(x, n, xq);
  float32x4_t m0 = vdupq_n_f32(0), m1 = m0;
  for (int i = 0; i < n; i += kLanes) {
    m0 = vmaxq_f32(m0, vabsq_f32(vld1q_f32(x + i)));
    m1 = vmaxq_f32(m1, vabsq_f32(vld1q_f32(x + i + 4)));
  }
  const Step step = step_of(vmaxvq_f32(vmaxq_f32(m0, m1)));
  const float32x4_t inverse = vdupq_n_f32(step.inverse), round = vdupq_n_f32(kRound);
  int32x4_t sum = vdupq_n_s32(0);
  for (int i = 0; i < n; i += kLanes) {
    // Whole numbers already: the conversion's truncation drops nothing.
    const int32x4_t a = vcvtq_s32_f32(vsubq_f32(vaddq_f32(vmulq_f32(vld1q_f32(x + i), inverse), round), round));
    const int32x4_t b = vcvtq_s32_f32(vsubq_f32(vaddq_f32(vmulq_f32(vld1q_f32(x + i + 4), inverse), round), round));
    sum = vaddq_s32(sum, vaddq_s32(a, b));
    vst1_s8(xq + i, vmovn_s16(vcombine_s16(vmovn_s32(a), vmovn_s32(b))));
  }
  return {step.d, vaddvq_s32(sum)};
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
  static const AffineKernels k{"neon", quantize, row_dot<4>, row_dot<8>, nullptr, nullptr, dequant<4>, dequant<8>};
  return &k;
}

}  // namespace engine::cpu

#else

namespace engine::cpu {
const AffineKernels* neon_kernels() { return nullptr; }
}  // namespace engine::cpu

#endif
