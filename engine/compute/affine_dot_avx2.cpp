// AVX2 kernels (affine_dot.hpp), compiled for AVX2 function by function so
// the binary still runs, with the scalar kernels, on a machine without it.
#include "engine/compute/affine_dot.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MESHINFER_AVX2 __attribute__((target("avx2,fma")))

namespace engine::cpu {

namespace {

// Elements j..j+7 of a packed row (j a multiple of 8) as floats.
template <int Bits>
MESHINFER_AVX2 inline __m256 values8(const unsigned char* row, std::int64_t j) {
  if constexpr (Bits == 4) {
    const __m256i word = _mm256_set1_epi32(static_cast<int>(word_at(row + j / 2)));
    const __m256i q = _mm256_and_si256(_mm256_srlv_epi32(word, _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                       _mm256_set1_epi32(0xF));
    return _mm256_cvtepi32_ps(q);
  } else {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + j));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
  }
}

// R rows side by side: R independent chains of fused multiply-adds. The loops
// over R are unrolled: as loops, GCC at -O2 keeps the lanes in memory, and
// every step waits on a store.
template <int Bits, int R>
MESHINFER_AVX2 void rows_dot(const AffineRows& w, std::int64_t r0, std::span<const Segment> segs, const float* x,
                             const float* xsum, float* out) {
  __m256 acc[R];
  float bias_sum[R];
  #pragma GCC unroll 4
  for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps(), bias_sum[i] = 0;
  for (std::size_t k = 0; k < segs.size(); ++k) {
    const Segment& s = segs[k];
    const float* xs = x + s.offset;
    __m256 lanes[R];
    if (s.first % kLanes == 0 && s.count % kLanes == 0) {
      #pragma GCC unroll 4
      for (int i = 0; i < R; ++i) lanes[i] = _mm256_setzero_ps();
      for (int e = 0; e < s.count; e += kLanes) {
        const __m256 xv = _mm256_loadu_ps(xs + e);
        #pragma GCC unroll 4
        for (int i = 0; i < R; ++i)
          lanes[i] = _mm256_fmadd_ps(values8<Bits>(row_bytes(w, r0 + i), s.first + e), xv, lanes[i]);
      }
    } else {
      #pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        alignas(32) float l[kLanes] = {};
        dot_lanes<Bits>(row_bytes(w, r0 + i), s.first, s.count, xs, l);
        lanes[i] = _mm256_load_ps(l);
      }
    }
    #pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      const std::int64_t g = (r0 + i) * w.row_groups + s.group;
      acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(load_scale(w.scales, w.scale_type, g)), lanes[i], acc[i]);
      bias_sum[i] = std::fma(load_scale(w.biases, w.scale_type, g), xsum[k], bias_sum[i]);
    }
  }
  #pragma GCC unroll 4
  for (int i = 0; i < R; ++i) {
    alignas(32) float l[kLanes];
    _mm256_store_ps(l, acc[i]);
    out[i] = reduce_lanes(l) + bias_sum[i];
  }
}

template <int Bits>
MESHINFER_AVX2 void row_dot(const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs,
                            const float* x, const float* xsum, float* out) {
  int i = 0;
  for (; i + kRowsAtOnce <= rows; i += kRowsAtOnce) rows_dot<Bits, kRowsAtOnce>(w, r0 + i, segs, x, xsum, out + i);
  for (; i < rows; ++i) rows_dot<Bits, 1>(w, r0 + i, segs, x, xsum, out + i);
}

template <int Bits>
MESHINFER_AVX2 void dequant(const void* row, std::int64_t first, int n, float scale, float bias, float* out) {
  if (first % kLanes != 0 || n % kLanes != 0) return dequant_scalar<Bits>(row, first, n, scale, bias, out);
  const __m256 s = _mm256_set1_ps(scale), b = _mm256_set1_ps(bias);
  const auto* bytes = static_cast<const unsigned char*>(row);
  for (int e = 0; e < n; e += kLanes) _mm256_storeu_ps(out + e, _mm256_fmadd_ps(s, values8<Bits>(bytes, first + e), b));
}

}  // namespace

const AffineKernels* avx2_kernels() {
  static const AffineKernels k{"avx2", row_dot<4>, row_dot<8>, dequant<4>, dequant<8>};
  static const bool usable = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return usable ? &k : nullptr;
}

}  // namespace engine::cpu

#else

namespace engine::cpu {
const AffineKernels* avx2_kernels() { return nullptr; }
}  // namespace engine::cpu

#endif
