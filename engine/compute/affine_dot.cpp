#include "engine/compute/affine_dot.hpp"

#include <cstdlib>
#include <string_view>

namespace engine::cpu {

template <int Bits>
void dot_lanes(const void* row, std::int64_t first, int n, const float* x, float* lanes) {
  for (int i = 0; i < n; ++i)
    lanes[i % kLanes] = std::fma(static_cast<float>(packed<Bits>(row, first + i)), x[i], lanes[i % kLanes]);
}

template <int Bits>
void dequant_scalar(const void* row, std::int64_t first, int n, float scale, float bias, float* out) {
  for (int i = 0; i < n; ++i) out[i] = std::fma(scale, static_cast<float>(packed<Bits>(row, first + i)), bias);
}

template void dot_lanes<4>(const void*, std::int64_t, int, const float*, float*);
template void dot_lanes<8>(const void*, std::int64_t, int, const float*, float*);
template void dequant_scalar<4>(const void*, std::int64_t, int, float, float, float*);
template void dequant_scalar<8>(const void*, std::int64_t, int, float, float, float*);

namespace {

template <int Bits>
void row_dot(const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs, const float* x,
             const float* xsum, float* out) {
  for (std::int64_t r = r0; r < r0 + rows; ++r) {
    const unsigned char* words = row_bytes(w, r);
    float acc[kLanes] = {}, bias_sum = 0;
    for (std::size_t k = 0; k < segs.size(); ++k) {
      float lanes[kLanes] = {};
      dot_lanes<Bits>(words, segs[k].first, segs[k].count, x + segs[k].offset, lanes);
      const std::int64_t g = r * w.row_groups + segs[k].group;
      const float scale = load_scale(w.scales, w.scale_type, g);
      for (int l = 0; l < kLanes; ++l) acc[l] = std::fma(scale, lanes[l], acc[l]);
      bias_sum = std::fma(load_scale(w.biases, w.scale_type, g), xsum[k], bias_sum);
    }
    out[r - r0] = reduce_lanes(acc) + bias_sum;
  }
}

}  // namespace

const AffineKernels& scalar_kernels() {
  static const AffineKernels k{"scalar", row_dot<4>, row_dot<8>, dequant_scalar<4>, dequant_scalar<8>};
  return k;
}

const AffineKernels& best_kernels() {
  static const AffineKernels& k = [&]() -> const AffineKernels& {
    const char* forced = std::getenv("MESHINFER_KERNELS");
    if (forced && std::string_view(forced) == "scalar") return scalar_kernels();
    if (const AffineKernels* v = avx2_kernels()) return *v;
    if (const AffineKernels* v = neon_kernels()) return *v;
    return scalar_kernels();
  }();
  return k;
}

}  // namespace engine::cpu
