// The x86 row dots (affine_dot.hpp), compiled twice: by affine_dot_avx2.cpp
// with AVX2's maddubs, and by affine_dot_avxvnni.cpp with AVX-VNNI's dpbusd.
// The including file defines, before including this one:
// - MESHINFER_TARGET, the target attribute of every function here;
// - dot32(acc, q, x): acc's int32 lanes plus the products of 32 unsigned q
//   (at most 255) and 32 signed x (|x| <= 127), summed in fours or pairs;
//   less kOffset·Σx, where kOffset is what it subtracts from 8-bit q to make
//   them signed (maddubs multiplies unsigned by signed bytes in pairs, which
//   255·127·2 would saturate).
// Only included by those two files, inside their anonymous namespace, after
// <immintrin.h> and <vector>.
#pragma once

// Elements j..j+31 of a packed row (j even for 4 bits) as 32 bytes, in order.
template <int Bits>
MESHINFER_TARGET inline __m256i values32(const unsigned char* row, std::int64_t j) {
  if constexpr (Bits == 8) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + j));
  } else {
    // Byte i holds elements 2i (low nibble) and 2i+1.
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + j / 2)), nib = _mm_set1_epi8(0xF);
    const __m128i lo = _mm_and_si128(v, nib), hi = _mm_and_si128(_mm_srli_epi16(v, 4), nib);
    return _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
  }
}

// 4 bits: elements j..j+63 (j even) from one load of 32 bytes, as
// [j..j+15, j+32..j+47] and [j+16..j+31, j+48..j+63] (each 128-bit half
// unpacked in place; x is laid out to match, see quarters64).
MESHINFER_TARGET inline void values64(const unsigned char* row, std::int64_t j, __m256i& a, __m256i& b) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + j / 2)), nib = _mm256_set1_epi8(0xF);
  const __m256i lo = _mm256_and_si256(v, nib), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
  a = _mm256_unpacklo_epi8(lo, hi);
  b = _mm256_unpackhi_epi8(lo, hi);
}

// x's values of the segments values64 reads, each 64 reordered as its
// quarters 0, 2, 1, 3 (once per call, for every row); the rest as they are.
inline const std::int8_t* quarters64(std::span<const engine::cpu::Segment> segs, const std::int8_t* xq) {
  thread_local std::vector<std::int8_t> out;
  if (segs.empty()) return xq;
  out.assign(xq, xq + segs.back().offset + segs.back().count);
  for (const engine::cpu::Segment& s : segs)
    if (s.count % 64 == 0 && s.first % 2 == 0)
      for (int e = s.offset; e < s.offset + s.count; e += 64) {
        std::copy_n(xq + e + 32, 16, out.begin() + e + 16);
        std::copy_n(xq + e + 16, 16, out.begin() + e + 32);
      }
  return out.data();
}

MESHINFER_TARGET inline __m256i load32(const std::int8_t* x) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
}

MESHINFER_TARGET inline std::int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// Σ q·xq over segment s of a row (q_sum: the segment's Σxq): whole vectors of
// 32, then the rest by the scalar kernel.
template <int Bits>
MESHINFER_TARGET inline std::int32_t segment_dot(const unsigned char* row, const engine::cpu::Segment& s,
                                                 const std::int8_t* xq, std::int32_t q_sum) {
  const std::int8_t* x = xq + s.offset;
  const int whole = Bits == 4 && s.first % 2 != 0 ? 0 : s.count / 32 * 32;
  __m256i acc = _mm256_setzero_si256();
  for (int e = 0; e < whole; e += 32)
    acc = dot32(acc, values32<Bits>(row, s.first + e), load32(x + e), Bits == 8);
  std::int32_t sum = hsum(acc);
  if (whole < s.count) {
    sum += engine::cpu::int_dot<Bits>(row, s.first + whole, s.count - whole, x + whole);
    for (int i = whole; i < s.count; ++i) q_sum -= x[i];  // leaves Σx of the vector part
  }
  return Bits == 8 ? sum + kOffset * q_sum : sum;
}

// Σ q·xq of 8 whole segments of one length (segment_dot's vector part),
// side by side, as 8 int32: 8 chains, and one reduction for all 8.
template <int Bits>
MESHINFER_TARGET inline __m256i eight_dots(const unsigned char* row, const engine::cpu::Segment* s,
                                           const std::int8_t* xq, const std::int32_t* q_sum) {
  __m256i acc[8];
  #pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_si256();
  if (Bits == 4 && s[0].count % 64 == 0) {
    for (int e = 0; e < s[0].count; e += 64) {
      #pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        __m256i a, b;
        values64(row, s[j].first + e, a, b);
        acc[j] = dot32(dot32(acc[j], a, load32(xq + s[j].offset + e), false), b, load32(xq + s[j].offset + e + 32), false);
      }
    }
  } else {
    for (int e = 0; e < s[0].count; e += 32) {
      #pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) acc[j] = dot32(acc[j], values32<Bits>(row, s[j].first + e), load32(xq + s[j].offset + e), Bits == 8);
    }
  }
  // [Σacc0..Σacc3 | Σacc4..Σacc7], each from its halves.
  const __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(acc[0], acc[1]), _mm256_hadd_epi32(acc[2], acc[3]));
  const __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(acc[4], acc[5]), _mm256_hadd_epi32(acc[6], acc[7]));
  __m256i sums = _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
  if (Bits == 8 && kOffset != 0)
    sums = _mm256_add_epi32(sums, _mm256_mullo_epi32(_mm256_set1_epi32(kOffset),
                                                     _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q_sum))));
  return sums;
}

// Scales (or biases) g..g+7 as floats.
MESHINFER_TARGET inline __m256 eight_scales(const void* base, engine::cpu::ScaleType type, std::int64_t g) {
  using engine::cpu::ScaleType;
  const auto* p = static_cast<const unsigned char*>(base);
  if (type == ScaleType::kBF16) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * g));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  if (type == ScaleType::kF32) return _mm256_loadu_ps(reinterpret_cast<const float*>(p + 4 * g));
  alignas(32) float f[8];
  for (int j = 0; j < 8; ++j) f[j] = engine::cpu::load_scale(base, type, g + j);
  return _mm256_load_ps(f);
}

// Whether segment_dot's vector part is all of s.
template <int Bits>
inline bool whole(const engine::cpu::Segment& s) {
  return s.count % 32 == 0 && (Bits == 8 || s.first % 2 == 0);
}

// What a kernel with wider vectors computes of a row instead: takes(k0),
// whether it gives the Σ q·xq of segments [k0, k0+8), and sums(row, k0) those.
struct NoWide {
  bool takes(int) const { return false; }
  MESHINFER_TARGET __m256i sums(const unsigned char*, int) const { return _mm256_setzero_si256(); }
};

// One row at a time; its segments 8 at a time (the wide kernel's, else
// eight_dots when they are whole and of one length, else one by one), their
// v (affine_dot.hpp) in a vector added to the row's lanes. Segments are
// consecutive groups, so their scales and biases are too.
template <int Bits, class Wide>
MESHINFER_TARGET void wide_row_dot(const engine::cpu::AffineRows& w, std::int64_t r0, int rows,
                                   std::span<const engine::cpu::Segment> segs, const engine::cpu::QuantizedX& x,
                                   float* out, const Wide& wide) {
  using namespace engine::cpu;
  const int n = static_cast<int>(segs.size());
  // Reordered for eight_dots only if some segments are left to it (the wide kernel takes leading runs).
  const bool all_wide = n > 0 && wide.takes((n - 1) / kLanes * kLanes);
  const std::int8_t* x4 = Bits == 4 && !all_wide ? quarters64(segs, x.q) : nullptr;
  for (std::int64_t r = r0; r < r0 + rows; ++r) {
    const unsigned char* row = row_bytes(w, r);
    // Two rows ahead: the hardware prefetcher alone left decode waiting on
    // the weights (16 against 12 GMAC/s on one core, 8-bit).
    if (r + 2 < r0 + rows)
      for (std::int64_t b = 0; b < w.row_words * 4; b += 64)
        _mm_prefetch(reinterpret_cast<const char*>(row_bytes(w, r + 2) + b), _MM_HINT_T0);
    __m256 lanes = _mm256_setzero_ps();
    for (int k0 = 0; k0 < n; k0 += kLanes) {
      const int m = std::min(kLanes, n - k0);
      bool fast = m == kLanes && !wide.takes(k0);
      for (int j = 0; fast && j < kLanes; ++j) fast = whole<Bits>(segs[k0 + j]) && segs[k0 + j].count == segs[k0].count;
      alignas(32) std::int32_t isum[kLanes];
      __m256i sums;
      if (wide.takes(k0)) {
        sums = wide.sums(row, k0);
      } else if (fast) {
        sums = eight_dots<Bits>(row, &segs[k0], Bits == 4 ? x4 : x.q, x.q_sum + k0);
      } else {
        for (int j = 0; j < m; ++j) isum[j] = segment_dot<Bits>(row, segs[k0 + j], x.q, x.q_sum[k0 + j]);
        if (m < kLanes) {
          alignas(32) float l[kLanes];
          _mm256_store_ps(l, lanes);
          add_segments(w, r, segs.data(), k0, m, isum, x, l);
          lanes = _mm256_load_ps(l);
          break;
        }
        sums = _mm256_load_si256(reinterpret_cast<const __m256i*>(isum));
      }
      const std::int64_t g = r * w.row_groups + segs[k0].group;
      const __m256 dq = _mm256_mul_ps(_mm256_loadu_ps(x.d + k0), _mm256_cvtepi32_ps(sums));
      const __m256 v = _mm256_add_ps(_mm256_mul_ps(eight_scales(w.scales, w.scale_type, g), dq),
                                     _mm256_mul_ps(eight_scales(w.biases, w.scale_type, g), _mm256_loadu_ps(x.x_sum + k0)));
      lanes = _mm256_add_ps(lanes, v);
    }
    alignas(32) float l[kLanes];
    _mm256_store_ps(l, lanes);
    out[r - r0] = reduce_lanes(l);
  }
}

template <int Bits>
MESHINFER_TARGET void row_dot(const engine::cpu::AffineRows& w, std::int64_t r0, int rows,
                              std::span<const engine::cpu::Segment> segs, const engine::cpu::QuantizedX& x,
                              float* out) {
  wide_row_dot<Bits>(w, r0, rows, segs, x, out, NoWide{});
}
