// AMX tile dots (affine_dot.hpp), for prefill: 16 weight rows against 16 rows
// of x, one TDPBSUD per 64 columns giving the 256 exact Σ q·xq of a group
// (x signed, q unsigned: neither needs an offset), then the row dot's float
// steps on 16 weight rows at once in AVX-512. Dequantizing for sgemm ran at
// a third of llama.cpp's prefill, which on these cores is AMX's too. Used on
// x86-64 Linux, where the kernel grants AMX's tile state to a process that
// asks; the row dots, the edges of a product and dequantization are
// AVX-512's (or AVX-VNNI's, or AVX2's).
#include "engine/compute/affine_dot.hpp"

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <vector>
#if !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*, which its flow analysis takes for a read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define MESHINFER_AMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw")))

namespace engine::cpu {

namespace {

constexpr int kTile = 16;  // weight rows, and rows of x, of a tile
constexpr int kStep = 64;  // columns of one TDPBSUD

// Tiles 0-3: Σ q·xq, [16 rows of x][16 weight rows] int32; 4 and 5: x,
// [16 rows][64 columns] int8; 6 and 7: q, 64 columns of 16 weight rows in
// AMX's layout (see pack_weights). All 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
  std::uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  std::uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};
static_assert(kTile * 4 == 64 && kStep == 64 && kStep / 4 == kTile);

// The vector kernels this file leaves the rest to.
const AffineKernels& base() {
  static const AffineKernels& k = avx512_kernels()    ? *avx512_kernels()
                                  : avxvnni_kernels() ? *avxvnni_kernels()
                                                      : *avx2_kernels();
  return k;
}

// Whether every segment is whole 64-column steps starting on a packed word.
bool fits(std::span<const Segment> segs) {
  for (const Segment& s : segs)
    if (s.count % kStep != 0 || s.first % 8 != 0) return false;
  return !segs.empty();
}

// Weight rows [r, r+16), every step of every segment, as TDPBSUD's second
// operand: 1 KB per step, its row k holding columns 4k..4k+3 of the 16 rows
// side by side. 8 bits: words as stored. 4 bits: a word's low nibbles are
// its columns 0, 2, 4, 6 and the high ones 1, 3, 5, 7, so x is permuted to
// match (pack_x); the integer sums do not care about the order.
template <int Bits>
MESHINFER_AMX void pack_weights(const AffineRows& w, std::int64_t r, std::span<const Segment> segs, std::uint8_t* out) {
  const auto* base_row = row_bytes(w, r);
  const __m512i at = _mm512_mullo_epi32(_mm512_set1_epi32(static_cast<int>(w.row_words * 4)),
                                        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  const __m512i nib = _mm512_set1_epi8(0xF);
  for (const Segment& s : segs)
    for (std::int64_t e = s.first; e < s.first + s.count; e += kStep, out += kStep * kTile) {
      const unsigned char* p = base_row + e * Bits / 8;
      for (int k = 0; k < kStep * Bits / 32; ++k) {
        const __m512i v = _mm512_i32gather_epi32(at, p + 4 * k, 1);
        if constexpr (Bits == 8) {
          _mm512_storeu_si512(out + 64 * k, v);
        } else {
          _mm512_storeu_si512(out + 128 * k, _mm512_and_si512(v, nib));
          _mm512_storeu_si512(out + 128 * k + 64, _mm512_and_si512(_mm512_srli_epi32(v, 4), nib));
        }
      }
    }
}

// Rows [0, n) of x (n a multiple of 16) as TDPBSUD's first operand: for
// each 16 rows, each 64 columns as 1 KB in a row. The rows a tile load
// gathered from their place, `cols` bytes apart, fell on few cache sets and
// evicted each other. 4 bits: each 8 columns in the order 0, 2, 4, 6, 1, 3,
// 5, 7 (see pack_weights).
template <int Bits>
MESHINFER_AMX const std::int8_t* pack_x(const QuantizedRows& x, int n) {
  thread_local std::vector<std::int8_t> out;
  thread_local std::uint64_t packed = 0;  // the serial of the rows in `out`: once per product and thread
  if (x.serial != 0 && x.serial == packed) return out.data();
  packed = x.serial;
  out.resize(static_cast<std::size_t>(n) * x.cols);
  const __m512i order = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15));
  for (int t = 0; t < n; ++t) {  // x read in order, for the prefetcher
    std::int8_t* p = out.data() + static_cast<std::size_t>(t / kTile) * kTile * x.cols + (t % kTile) * kStep;
    for (int c = 0; c < x.cols; c += kStep, p += kStep * kTile) {
      const __m512i v = _mm512_loadu_si512(x.q + static_cast<std::size_t>(t) * x.cols + c);
      _mm512_storeu_si512(p, Bits == 4 ? _mm512_shuffle_epi8(v, order) : v);
    }
  }
  return out.data();
}

// v = scale·(d·Σq·xq) + bias·Σx of segment k for 16 weight rows and one row of x.
MESHINFER_AMX inline __m512 segment_v(const QuantizedX& x, int k, const std::int32_t* sums, const float* scales,
                                      const float* biases) {
  const __m512 dq = _mm512_mul_ps(_mm512_set1_ps(x.d[k]), _mm512_cvtepi32_ps(_mm512_loadu_si512(sums)));
  return _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(scales + kTile * k), dq),
                       _mm512_mul_ps(_mm512_loadu_ps(biases + kTile * k), _mm512_set1_ps(x.x_sum[k])));
}

// Rows [r, r+16) of w against rows [t0, t0+16) of x, into out (rows of x
// `ld` apart): first every segment's Σ q·xq (x and q in pack_x's and
// pack_weights's layouts), 4 segments at a time in tiles 0-3, loading x and
// q through tiles 4 and 6, then 5 and 7, so that storing a sum waits on a
// TDPBSUD issued 3 before, not on the one just issued (which took most of
// the time); then per row of x, each segment k's v added to its lane k mod
// 8 and the lanes reduced, as affine_dot.hpp orders them, in registers.
MESHINFER_AMX void tile16(std::span<const Segment> segs, const QuantizedRows& x, const std::int8_t* xq, int t0,
                          const std::uint8_t* q, const float* scales, const float* biases, std::int32_t* sums,
                          float* out, std::int64_t ld, bool accumulate) {
  constexpr int kSums = kTile * kTile, kBytes = kStep * kTile;
  const std::int8_t* xt = xq + static_cast<std::size_t>(t0) * x.cols;
  const int ns = x.segments;
  for (int k = 0; k < ns; k += 4) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int e = 0; e < segs[k].count; e += kStep, q += kBytes) {
      _tile_loadd(4, xt + (segs[k].offset + e) * kTile, kStep);
      _tile_loadd(6, q, kTile * 4);
      _tile_dpbsud(0, 4, 6);
    }
    for (int e = 0; k + 1 < ns && e < segs[k + 1].count; e += kStep, q += kBytes) {
      _tile_loadd(5, xt + (segs[k + 1].offset + e) * kTile, kStep);
      _tile_loadd(7, q, kTile * 4);
      _tile_dpbsud(1, 5, 7);
    }
    for (int e = 0; k + 2 < ns && e < segs[k + 2].count; e += kStep, q += kBytes) {
      _tile_loadd(4, xt + (segs[k + 2].offset + e) * kTile, kStep);
      _tile_loadd(6, q, kTile * 4);
      _tile_dpbsud(2, 4, 6);
    }
    for (int e = 0; k + 3 < ns && e < segs[k + 3].count; e += kStep, q += kBytes) {
      _tile_loadd(5, xt + (segs[k + 3].offset + e) * kTile, kStep);
      _tile_loadd(7, q, kTile * 4);
      _tile_dpbsud(3, 5, 7);
    }
    _tile_stored(0, sums + kSums * k, kTile * 4);
    if (k + 1 < ns) _tile_stored(1, sums + kSums * (k + 1), kTile * 4);
    if (k + 2 < ns) _tile_stored(2, sums + kSums * (k + 2), kTile * 4);
    if (k + 3 < ns) _tile_stored(3, sums + kSums * (k + 3), kTile * 4);
  }
  for (int t = 0; t < kTile; ++t) {
    const QuantizedX xr = x.row(t0 + t);
    const std::int32_t* st = sums + t * kTile;
    __m512 l[kLanes];
#pragma GCC unroll 8
    for (int j = 0; j < kLanes; ++j) l[j] = _mm512_setzero_ps();
    for (int k = 0; k < ns; k += kLanes) {
#pragma GCC unroll 8
      for (int j = 0; j < kLanes; ++j)
        if (k + j < ns) l[j] = _mm512_add_ps(l[j], segment_v(xr, k + j, st + kSums * (k + j), scales, biases));
    }
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(l[0], l[4]), _mm512_add_ps(l[2], l[6])),
                                     _mm512_add_ps(_mm512_add_ps(l[1], l[5]), _mm512_add_ps(l[3], l[7])));
    float* to = out + (t0 + t) * ld;
    _mm512_storeu_ps(to, accumulate ? _mm512_add_ps(_mm512_loadu_ps(to), sum) : sum);
  }
}

// Whole tiles of 16 weight rows by 16 rows of x on AMX; the rows of either
// left over, and products whose segments do not fit, by the row dot.
template <int Bits>
MESHINFER_AMX void tile_dot(const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs,
                            const QuantizedRows& x, float* out, std::int64_t ld, bool accumulate) {
  const RowDot dot = Bits == 4 ? base().dot4 : base().dot8;
  const bool amx = fits(segs);
  const int tiled_rows = amx ? rows / kTile * kTile : 0, tiled_n = amx ? x.n / kTile * kTile : 0;
  for (int t = 0; t < x.n; ++t) {  // rows of x past the tiles: every weight row; the others: the rows past them
    const int done = t < tiled_n ? tiled_rows : 0;
    if (done < rows) dot_into(dot, w, r0 + done, rows - done, segs, x.row(t), out + t * ld + done, accumulate);
  }
  if (tiled_rows == 0 || tiled_n == 0) return;
  static const TileConfig config;
  _tile_loadconfig(&config);
  const std::int8_t* xq = pack_x<Bits>(x, tiled_n);
  thread_local std::vector<std::uint8_t> q;
  thread_local std::vector<float> scales, biases;
  thread_local std::vector<std::int32_t> sums;
  q.resize(static_cast<std::size_t>(x.cols) * kTile);
  scales.resize(static_cast<std::size_t>(x.segments) * kTile);
  biases.resize(scales.size());
  sums.resize(static_cast<std::size_t>(x.segments) * kTile * kTile);
  for (std::int64_t r = r0; r < r0 + tiled_rows; r += kTile) {
    pack_weights<Bits>(w, r, segs, q.data());
    for (int k = 0; k < x.segments; ++k)
      for (int i = 0; i < kTile; ++i) {
        const std::int64_t g = (r + i) * w.row_groups + segs[k].group;
        scales[kTile * k + i] = load_scale(w.scales, w.scale_type, g);
        biases[kTile * k + i] = load_scale(w.biases, w.scale_type, g);
      }
    // GCC's tile loads are asm that names no memory: packing stays before them, and the next after.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    for (int t0 = 0; t0 < tiled_n; t0 += kTile)
      tile16(segs, x, xq, t0, q.data(), scales.data(), biases.data(), sums.data(), out + (r - r0), ld, accumulate);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  _tile_release();
}

// CPUID leaf 7, subleaf 0, EDX bits 24 and 25: AMX-TILE and AMX-INT8.
bool has_amx() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & (3u << 24)) == (3u << 24);
}

// Linux gives a process AMX's 8 KB of tile state only once it asks
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA).
bool amx_permitted() {
  constexpr int kReqXcompPerm = 0x1023, kXtileData = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
}

}  // namespace

const AffineKernels* amx_kernels() {
  static const bool usable = avx2_kernels() && __builtin_cpu_supports("avx512f") &&
                             __builtin_cpu_supports("avx512bw") && has_amx() && amx_permitted();
  if (!usable) return nullptr;
  static const AffineKernels k{"amx",       base().quantize, base().dot4,     base().dot8,
                               tile_dot<4>, tile_dot<8>,     base().dequant4, base().dequant8};
  return &k;
}

}  // namespace engine::cpu

#else

namespace engine::cpu {
const AffineKernels* amx_kernels() { return nullptr; }
}  // namespace engine::cpu

#endif
