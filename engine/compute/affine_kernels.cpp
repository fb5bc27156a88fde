#include "engine/compute/affine_kernels.hpp"

#include <algorithm>
#include <vector>

#include "engine/compute/affine_dot.hpp"
#include "engine/compute/thread_pool.hpp"

namespace engine::cpu {

namespace {

std::vector<Segment> segments(const AffineRows& w, std::int64_t col0, int cols) {
  std::vector<Segment> out;
  for (int off = 0; off < cols;) {
    const std::int64_t j = col0 + off, g = j / w.group;
    const int count = static_cast<int>(std::min<std::int64_t>((g + 1) * w.group - j, cols - off));
    out.push_back({j, count, off, g});
    off += count;
  }
  return out;
}

// Rows [r0, r0+rows) dequantized into out[rows x cols].
void dequantize(const AffineKernels& k, const AffineRows& w, std::int64_t r0, int rows, std::span<const Segment> segs,
                int cols, float* out) {
  const Dequant dequant = w.bits == 4 ? k.dequant4 : k.dequant8;
  for (int i = 0; i < rows; ++i) {
    const std::int64_t r = r0 + i;
    for (const Segment& s : segs) {
      const std::int64_t g = r * w.row_groups + s.group;
      dequant(row_bytes(w, r), s.first, s.count, load_scale(w.scales, w.scale_type, g),
              load_scale(w.biases, w.scale_type, g), out + static_cast<std::size_t>(i) * cols + s.offset);
    }
  }
}

// Rows per piece of work: fixed by the shape, so any thread count computes the same.
constexpr int kDotRows = 64;

}  // namespace

const char* affine_kernel_isa() { return best_kernels().isa; }

void affine_linear(std::span<const float> x, int n, const AffineRows& w, int rows, std::int64_t col0, int cols,
                   std::span<float> y, bool accumulate, ThreadPool* pool) {
  if (n == 0 || rows == 0) return;
  const AffineKernels& k = best_kernels();
  const std::vector<Segment> segs = segments(w, col0, cols);
  // Each input row quantized per segment (affine_dot.hpp), and its Σx per
  // segment for the bias term: done once, shared by every output row.
  const std::size_t ns = segs.size();
  std::vector<std::int8_t> xq(static_cast<std::size_t>(n) * cols);
  std::vector<float> d(ns * n), x_sum(ns * n);
  std::vector<std::int32_t> q_sum(ns * n);
  for (int t = 0; t < n; ++t)
    for (std::size_t k = 0; k < ns; ++k) {
      const std::size_t at = static_cast<std::size_t>(t) * cols + segs[k].offset;
      const QuantizedSegment q = quantize_segment(x.data() + at, segs[k].count, xq.data() + at);
      d[t * ns + k] = q.d;
      q_sum[t * ns + k] = q.sum;
      float sum = 0;
      for (int i = 0; i < segs[k].count; ++i) sum += x[at + i];
      x_sum[t * ns + k] = sum;
    }
  const QuantizedRows xs{xq.data(), d.data(), q_sum.data(), x_sum.data(), n, cols, static_cast<int>(ns)};
  const TileDot tile = w.bits == 4 ? k.tile4 : k.tile8;
  run_blocks(pool, rows, kDotRows, [&](int r0, int count) {
    thread_local std::vector<float> out;  // reused: a fresh one would be page-faulted in every time
    out.resize(static_cast<std::size_t>(n) * count);
    tile(w, r0, count, segs, xs, out.data(), count);
    for (int t = 0; t < n; ++t) {
      const float* ot = out.data() + static_cast<std::size_t>(t) * count;
      float* yt = y.data() + static_cast<std::size_t>(t) * rows + r0;
      for (int i = 0; i < count; ++i) yt[i] = accumulate ? yt[i] + ot[i] : ot[i];
    }
  });
}

void affine_row(const AffineRows& w, std::int64_t r, std::int64_t col0, int cols, std::span<float> out) {
  dequantize(best_kernels(), w, r, 1, segments(w, col0, cols), cols, out.data());
}

}  // namespace engine::cpu
