#include "engine/compute/affine_dot.hpp"

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace engine::cpu {

QuantizedSegment quantize_segment(const float* x, int n, std::int8_t* xq) {
  // Eight running maxima, then theirs: the same maximum, without a chain of n
  // dependent steps (half of quantizing a prefill's rows).
  float m[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) m[j] = std::max(m[j], std::fabs(x[i + j]));
  for (; i < n; ++i) m[0] = std::max(m[0], std::fabs(x[i]));
  const Step step = step_of(*std::max_element(m, m + kLanes));
  // Rounded inline, where nearbyint was a library call per value (2% of decode).
  std::int32_t sum = 0;
  for (i = 0; i < n; ++i) sum += xq[i] = static_cast<std::int8_t>((x[i] * step.inverse + kRound) - kRound);
  return {step.d, sum};
}

template <int Bits>
std::int32_t int_dot(const void* row, std::int64_t first, int n, const std::int8_t* xq) {
  std::int32_t sum = 0;
  for (int i = 0; i < n; ++i) sum += static_cast<std::int32_t>(packed<Bits>(row, first + i)) * xq[i];
  return sum;
}

template <int Bits>
void dequant_scalar(const void* row, std::int64_t first, int n, float scale, float bias, float* out) {
  for (int i = 0; i < n; ++i) out[i] = std::fma(scale, static_cast<float>(packed<Bits>(row, first + i)), bias);
}

template std::int32_t int_dot<4>(const void*, std::int64_t, int, const std::int8_t*);
template std::int32_t int_dot<8>(const void*, std::int64_t, int, const std::int8_t*);
template void dequant_scalar<4>(const void*, std::int64_t, int, float, float, float*);
template void dequant_scalar<8>(const void*, std::int64_t, int, float, float, float*);

namespace {

template <int Bits>
void row_dot(const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs, const QuantizedX& x,
             float* out) {
  const int n = static_cast<int>(segs.size());
  for (std::int64_t r = r0; r < r0 + rows; ++r) {
    float lanes[kLanes] = {};
    for (int k0 = 0; k0 < n; k0 += kLanes) {
      std::int32_t isum[kLanes];
      const int m = std::min(kLanes, n - k0);
      for (int j = 0; j < m; ++j) {
        const Segment& s = segs[k0 + j];
        isum[j] = int_dot<Bits>(row_bytes(w, r), s.first, s.count, x.q + s.offset);
      }
      add_segments(w, r, segs.data(), k0, m, isum, x, lanes);
    }
    out[r - r0] = reduce_lanes(lanes);
  }
}

}  // namespace

const AffineKernels& scalar_kernels() {
  static const AffineKernels k{"scalar", quantize_segment, row_dot<4>,        row_dot<8>,
                               nullptr,  nullptr,          dequant_scalar<4>, dequant_scalar<8>};
  return k;
}

const AffineKernels& best_kernels() {
  static const AffineKernels& k = [&]() -> const AffineKernels& {
    const char* forced = std::getenv("MESHINFER_KERNELS");
    if (forced && std::string_view(forced) == "scalar") return scalar_kernels();
    if (const AffineKernels* v = amx_kernels()) return *v;
    if (const AffineKernels* v = avx512_kernels()) return *v;
    if (const AffineKernels* v = avxvnni_kernels()) return *v;
    if (const AffineKernels* v = avx2_kernels()) return *v;
    if (const AffineKernels* v = neon_kernels()) return *v;
    return scalar_kernels();
  }();
  return k;
}

}  // namespace engine::cpu
