// AVX-512 VNNI kernels (affine_dot.hpp): affine_dot_x86.hpp's row dots on
// 512-bit dpbusd, where 4-bit rows, compute-bound on AVX-VNNI (14 GB/s of
// weights on one core against 20 for 8 bits), unpack each 64 bytes with
// one shift and two ANDs: x is reordered once per call to match the nibbles
// (evens_odds), where AVX-VNNI interleaves them back in order. Quantization
// and dequantization are AVX2's. Compiled for AVX-512 function by function,
// and used only where the CPU has it.
#include "engine/compute/affine_dot.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <array>
#include <vector>
#if !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*, which its flow analysis takes for a read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define MESHINFER_TARGET __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

namespace engine::cpu {

namespace {

constexpr std::int32_t kOffset = 0;

MESHINFER_TARGET inline __m256i dot32(__m256i acc, __m256i q, __m256i x, bool) {
  return _mm256_dpbusd_epi32(acc, q, x);
}

#include "engine/compute/affine_dot_x86.hpp"

constexpr int kBlock = 128;  // elements of one 64-byte load of 4-bit words

// Byte indices of permutex2var over two 64-byte vectors: the even elements (odd: +1).
constexpr std::array<std::int8_t, 64> kEvens = [] {
  std::array<std::int8_t, 64> a{};
  for (int i = 0; i < 64; ++i) a[i] = static_cast<std::int8_t>(2 * i);
  return a;
}();

// Σ q·xq of 8 consecutive whole segments of C columns (32, 64 or 128) of a
// 4-bit row, 128 columns per step: the low nibbles of 64 bytes are the even
// columns, the high ones the odd, and x is laid out to match, each 128 as
// its 64 even then 64 odd values. Int32 lane i of a step then sums columns
// 8i..8i+7, and each 128-bit lane 32 columns: reduced to 8 sums by one
// transpose-add of the steps and a permutation per 32 columns of a segment.
template <int C>
class Wide4 {
 public:
  static_assert(C == 32 || C == 64 || C == 128);
  static constexpr int kSteps = 8 * C / kBlock;

  // The leading segments that make whole runs of 8 (all if every segment has C columns).
  MESHINFER_TARGET Wide4(std::span<const Segment> segs, const std::int8_t* xq) {
    while (runs_ * 8 + 8 <= static_cast<int>(segs.size())) {
      bool whole = true;
      for (int j = runs_ * 8; j < runs_ * 8 + 8; ++j) whole = whole && segs[j].count == C && segs[j].first % 2 == 0;
      if (!whole) break;
      ++runs_;
    }
    if (runs_ == 0) return;
    first_ = segs[0].first;
    thread_local std::vector<std::int8_t> reordered;
    reordered.resize(static_cast<std::size_t>(runs_) * 8 * C);
    const __m512i evens = _mm512_loadu_si512(kEvens.data()), odds = _mm512_add_epi8(evens, _mm512_set1_epi8(1));
    for (int e = 0; e < runs_ * 8 * C; e += kBlock) {
      const __m512i a = _mm512_loadu_si512(xq + segs[0].offset + e),
                    b = _mm512_loadu_si512(xq + segs[0].offset + e + 64);
      _mm512_storeu_si512(reordered.data() + e, _mm512_permutex2var_epi8(a, evens, b));
      _mm512_storeu_si512(reordered.data() + e + 64, _mm512_permutex2var_epi8(a, odds, b));
    }
    x_ = reordered.data();
  }

  bool takes(int k0) const { return k0 < runs_ * 8; }

  MESHINFER_TARGET __m256i sums(const unsigned char* row, int k0) const {
    const unsigned char* q = row + (first_ + static_cast<std::int64_t>(k0) * C) / 2;
    const std::int8_t* x = x_ + static_cast<std::size_t>(k0) * C;
    const __m512i nib = _mm512_set1_epi8(0xF);
    __m512i step[kSteps < 4 ? 4 : kSteps];
#pragma GCC unroll 8
    for (int b = 0; b < kSteps; ++b) {
      const __m512i v = _mm512_loadu_si512(q + b * kBlock / 2);
      const __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
      step[b] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_loadu_si512(x + b * kBlock)),
                                    hi, _mm512_loadu_si512(x + b * kBlock + 64));
    }
#pragma GCC unroll 4
    for (int b = kSteps; b < 4; ++b) step[b] = _mm512_setzero_si512();
    // Per group of 4 steps, each 128-bit lane L as [Σ step0 lane L, ..., Σ step3 lane L].
    __m512i t[2];
#pragma GCC unroll 2
    for (int h = 0; h < (kSteps + 3) / 4; ++h) {
      const __m512i* s = step + 4 * h;
      const __m512i a = _mm512_add_epi32(_mm512_unpacklo_epi32(s[0], s[1]), _mm512_unpackhi_epi32(s[0], s[1]));
      const __m512i b = _mm512_add_epi32(_mm512_unpacklo_epi32(s[2], s[3]), _mm512_unpackhi_epi32(s[2], s[3]));
      t[h] = _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
    }
    if constexpr (kSteps < 8) t[1] = t[0];
    __m512i sums = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int j = 0; j < C / 32; ++j)
      sums = _mm512_add_epi32(sums, _mm512_permutex2var_epi32(t[0], _mm512_loadu_si512(kPick[j].data()), t[1]));
    return _mm512_castsi512_si256(sums);
  }

 private:
  // kPick[j][s]: where the j-th 32 columns of segment s are in t[0], t[1]
  // (32-column chunk c is 128-bit lane c % 4 of step c / 4).
  static constexpr std::array<std::array<std::int32_t, 16>, C / 32> kPick = [] {
    std::array<std::array<std::int32_t, 16>, C / 32> p{};
    for (int j = 0; j < C / 32; ++j)
      for (int s = 0; s < 8; ++s) {
        const int c = s * (C / 32) + j, step = c / 4, lane = c % 4;
        p[j][s] = 16 * (step / 4) + 4 * lane + step % 4;
      }
    return p;
  }();

  std::int64_t first_ = 0;
  const std::int8_t* x_ = nullptr;
  int runs_ = 0;
};

// Each 128-bit lane L of four vectors s[0..3] as [Σ s[0] lane L, ..., Σ s[3] lane L].
MESHINFER_TARGET inline __m512i lane_sums4(const __m512i* s) {
  const __m512i a = _mm512_add_epi32(_mm512_unpacklo_epi32(s[0], s[1]), _mm512_unpackhi_epi32(s[0], s[1]));
  const __m512i b = _mm512_add_epi32(_mm512_unpacklo_epi32(s[2], s[3]), _mm512_unpackhi_epi32(s[2], s[3]));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
}

// Σ q·xq of 8 consecutive whole segments of C columns (64 or 128) of an
// 8-bit row: one 64-byte dpbusd per 64 columns into a vector per segment
// (AVX2's takes two), the 8 vectors reduced together.
template <int C>
class Wide8 {
 public:
  static_assert(C == 64 || C == 128);

  MESHINFER_TARGET Wide8(std::span<const Segment> segs, const std::int8_t* xq) {
    while (runs_ * 8 + 8 <= static_cast<int>(segs.size())) {
      bool whole = true;
      for (int j = runs_ * 8; j < runs_ * 8 + 8; ++j) whole = whole && segs[j].count == C;
      if (!whole) break;
      ++runs_;
    }
    if (runs_ == 0) return;
    first_ = segs[0].first;
    x_ = xq + segs[0].offset;
  }

  bool takes(int k0) const { return k0 < runs_ * 8; }

  MESHINFER_TARGET __m256i sums(const unsigned char* row, int k0) const {
    const unsigned char* q = row + first_ + static_cast<std::int64_t>(k0) * C;
    const std::int8_t* x = x_ + static_cast<std::size_t>(k0) * C;
    __m512i acc[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      acc[j] =
          _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(q + j * C), _mm512_loadu_si512(x + j * C));
      if constexpr (C == 128)
        acc[j] = _mm512_dpbusd_epi32(acc[j], _mm512_loadu_si512(q + j * C + 64), _mm512_loadu_si512(x + j * C + 64));
    }
    const __m512i t0 = lane_sums4(acc), t1 = lane_sums4(acc + 4);
    // Lanes [t0.0+t0.1, t0.2+t0.3, t1.0+t1.1, t1.2+t1.3], then [segments 0-3, 4-7].
    const __m512i u = _mm512_add_epi32(_mm512_shuffle_i64x2(t0, t1, 0x88), _mm512_shuffle_i64x2(t0, t1, 0xDD));
    const __m512i v = _mm512_add_epi32(_mm512_shuffle_i64x2(u, u, 0x88), _mm512_shuffle_i64x2(u, u, 0xDD));
    return _mm512_castsi512_si256(v);
  }

 private:
  std::int64_t first_ = 0;
  const std::int8_t* x_ = nullptr;
  int runs_ = 0;
};

MESHINFER_TARGET void dot8(const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs,
                           const QuantizedX& x, float* out) {
  switch (segs.empty() ? 0 : segs[0].count) {
    case 64:
      return wide_row_dot<8>(w, r0, rows, segs, x, out, Wide8<64>(segs, x.q));
    case 128:
      return wide_row_dot<8>(w, r0, rows, segs, x, out, Wide8<128>(segs, x.q));
    default:
      return row_dot<8>(w, r0, rows, segs, x, out);
  }
}

MESHINFER_TARGET void dot4(const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs,
                           const QuantizedX& x, float* out) {
  switch (segs.empty() ? 0 : segs[0].count) {
    case 32:
      return wide_row_dot<4>(w, r0, rows, segs, x, out, Wide4<32>(segs, x.q));
    case 64:
      return wide_row_dot<4>(w, r0, rows, segs, x, out, Wide4<64>(segs, x.q));
    case 128:
      return wide_row_dot<4>(w, r0, rows, segs, x, out, Wide4<128>(segs, x.q));
    default:
      return row_dot<4>(w, r0, rows, segs, x, out);
  }
}

}  // namespace

const AffineKernels* avx512_kernels() {
  const AffineKernels* avx2 = avx2_kernels();
  static const bool usable = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
                             __builtin_cpu_supports("avx512vbmi");
  if (!usable) return nullptr;
  static const AffineKernels k{"avx512-vnni", avx2->quantize, dot4,           dot8,
                               nullptr,       nullptr,        avx2->dequant4, avx2->dequant8};
  return &k;
}

}  // namespace engine::cpu

#else

namespace engine::cpu {
const AffineKernels* avx512_kernels() { return nullptr; }
}  // namespace engine::cpu

#endif
