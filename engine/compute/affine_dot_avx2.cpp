// AVX2 kernels (affine_dot.hpp), compiled for AVX2 function by function so
// the binary still runs, with the scalar kernels, on a machine without it.
// The row dots are affine_dot_x86.hpp's, on maddubs.
#include "engine/compute/affine_dot.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <vector>
#define MESHINFER_AVX2 __attribute__((target("avx2,fma")))
#define MESHINFER_TARGET MESHINFER_AVX2

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

constexpr std::int32_t kOffset = 128;

// 8-bit: Σ(q-128)·x with ggml's sign trick, maddubs(|q-128|, x·sign(q-128))
// (pairs of at most 128·127); 4-bit q is at most 15, so maddubs takes it as it is.
MESHINFER_AVX2 inline __m256i dot32(__m256i acc, __m256i q, __m256i x, bool eight) {
  __m256i p;
  if (eight) {
    const __m256i s = _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
    p = _mm256_maddubs_epi16(_mm256_abs_epi8(s), _mm256_sign_epi8(x, s));
  } else {
    p = _mm256_maddubs_epi16(q, x);
  }
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

#include "engine/compute/affine_dot_x86.hpp"

// quantize_segment 8 values at a time: the same maximum and the same rounding of each value.
MESHINFER_AVX2 QuantizedSegment quantize(const float* x, int n, std::int8_t* xq) {
  if (n % kLanes != 0) return quantize_segment(x, n, xq);
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += kLanes) m = _mm256_max_ps(m, _mm256_and_ps(magnitude, _mm256_loadu_ps(x + i)));
  alignas(32) float l[kLanes];
  _mm256_store_ps(l, m);
  const Step step = step_of(*std::max_element(l, l + kLanes));
  const __m256 inverse = _mm256_set1_ps(step.inverse), round = _mm256_set1_ps(kRound);
  __m256i sum = _mm256_setzero_si256();
  for (int i = 0; i < n; i += kLanes) {
    const __m256 r = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), inverse), round), round);
    const __m256i q = _mm256_cvttps_epi32(r);
    sum = _mm256_add_epi32(sum, q);
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));  // |q| <= 127
    _mm_storel_epi64(reinterpret_cast<__m128i*>(xq + i), _mm_packs_epi16(q16, q16));
  }
  return {step.d, hsum(sum)};
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
  static const AffineKernels k{"avx2", quantize, row_dot<4>, row_dot<8>, nullptr, nullptr, dequant<4>, dequant<8>};
  static const bool usable = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return usable ? &k : nullptr;
}

}  // namespace engine::cpu

#else

namespace engine::cpu {
const AffineKernels* avx2_kernels() { return nullptr; }
}  // namespace engine::cpu

#endif
