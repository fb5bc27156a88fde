#include "engine/compute/affine_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <functional>
#include <vector>

#include "engine/compute/affine_dot.hpp"
#include "engine/compute/cpu_ops.hpp"
#include "engine/compute/thread_pool.hpp"

namespace engine::cpu {

namespace {

// Σx of a segment in 8 running sums (element i into sum i mod 8), then
// theirs in a fixed order: the same on every machine, and lanes of one
// vector, where one chain of dependent adds was a tenth of quantizing.
float segment_sum(const float* x, int n) {
  float lane[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] += x[i + j];
  for (; i < n; ++i) lane[i % kLanes] += x[i];
  return reduce_lanes(lane);
}

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

// Rows per piece of work (each row's result is the same in any piece): a
// few for decode, to share one pass over the weights among threads (128
// rather than 64: a piece's first rows wait on memory before the row dots'
// prefetching is ahead, and decode gained 3%); more
// for many rows of x, which sgemm takes in one call; 4 tiles for a tile dot,
// which prepares x once per product and thread (256, with x prepared per
// piece, left a thread that came late to a product idle at its end).
constexpr int kDotRows = 128, kBlockRows = 256, kTileRows = 64, kQuantizeRows = 16;

}  // namespace

const char* affine_kernel_isa() { return best_kernels().isa; }

void affine_linear(std::span<const float> x, int n, std::int64_t col0, int cols,
                   std::span<const AffineProduct> products, ThreadPool* pool) {
  if (n == 0 || products.empty()) return;
  const AffineKernels& kernels = best_kernels();
  const std::vector<Segment> segs = segments(*products[0].w, col0, cols);
  const auto tile_of = [&](const AffineRows& w) { return w.bits == 4 ? kernels.tile4 : kernels.tile8; };
  const bool tiles = n >= kManyRows && tile_of(*products[0].w);
  // Each product's rows in pieces, every product's pieces in one job: the
  // thread done first with one product goes on to the next, not to a wait.
  struct Piece {
    const AffineProduct* product;
    int r0, count;
  };
  std::vector<Piece> pieces;
  const int per = n < kManyRows ? kDotRows : tiles ? kTileRows : kBlockRows;
  for (const AffineProduct& p : products)
    for (int r0 = 0; r0 < p.rows; r0 += per) pieces.push_back({&p, r0, std::min(per, p.rows - r0)});
  const auto each_piece = [&](const std::function<void(const Piece&)>& f) {
    run_blocks(pool, static_cast<int>(pieces.size()), 1, [&](int i, int) { f(pieces[i]); });
  };
  if (n >= kManyRows && !tiles) {
    each_piece([&](const Piece& p) {
      thread_local std::vector<float> block;  // reused: a fresh one would be page-faulted in every time
      block.resize(static_cast<std::size_t>(p.count) * cols);
      dequantize(kernels, *p.product->w, p.r0, p.count, segs, cols, block.data());
      linear_block(x.data(), n, cols, block.data(), cols, p.count, p.product->y.data() + p.r0, p.product->rows,
                   p.product->accumulate);
    });
    return;
  }
  // Each input row quantized per segment (affine_dot.hpp), and its Σx per
  // segment for the bias term: done once, shared by every output row of
  // every product; on the pool, as a prefill's rows for the tile dots took a
  // tenth of its time on one thread.
  const std::size_t ns = segs.size();
  std::vector<std::int8_t> xq(static_cast<std::size_t>(n) * cols);
  std::vector<float> d(ns * n), x_sum(ns * n);
  std::vector<std::int32_t> q_sum(ns * n);
  run_blocks(pool, n, kQuantizeRows, [&](int t0, int count) {
    for (int t = t0; t < t0 + count; ++t) {
      const float* xt = x.data() + static_cast<std::size_t>(t) * cols;
      for (std::size_t k = 0; k < ns; ++k) {
        const QuantizedSegment q = kernels.quantize(xt + segs[k].offset, segs[k].count,
                                                    xq.data() + static_cast<std::size_t>(t) * cols + segs[k].offset);
        d[t * ns + k] = q.d;
        q_sum[t * ns + k] = q.sum;
        x_sum[t * ns + k] = segment_sum(xt + segs[k].offset, segs[k].count);
      }
    }
  });
  static std::atomic<std::uint64_t> serials{0};
  const QuantizedRows xs{xq.data(), d.data(), q_sum.data(), x_sum.data(), n, cols, static_cast<int>(ns), ++serials};
  each_piece([&](const Piece& p) {
    const AffineProduct& to = *p.product;
    const AffineRows& w = *to.w;
    if (tiles) return tile_of(w)(w, p.r0, p.count, segs, xs, to.y.data() + p.r0, to.rows, to.accumulate);
    const RowDot dot = w.bits == 4 ? kernels.dot4 : kernels.dot8;
    for (int t = 0; t < n; ++t)
      dot_into(dot, w, p.r0, p.count, segs, xs.row(t), to.y.data() + static_cast<std::size_t>(t) * to.rows + p.r0,
               to.accumulate);
  });
}

void affine_linear(std::span<const float> x, int n, const AffineRows& w, int rows, std::int64_t col0, int cols,
                   std::span<float> y, bool accumulate, ThreadPool* pool) {
  if (rows == 0) return;
  const AffineProduct one{&w, rows, y, accumulate};
  affine_linear(x, n, col0, cols, {&one, 1}, pool);
}

void affine_row(const AffineRows& w, std::int64_t r, std::int64_t col0, int cols, std::span<float> out) {
  dequantize(best_kernels(), w, r, 1, segments(w, col0, cols), cols, out.data());
}

}  // namespace engine::cpu
