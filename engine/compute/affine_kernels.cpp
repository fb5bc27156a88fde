#include "engine/compute/affine_kernels.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/compute/safetensors.hpp"

namespace engine::cpu {

namespace {

float load_scale(const void* base, ScaleType type, std::int64_t i) {
  const auto* p = static_cast<const unsigned char*>(base);
  if (type == ScaleType::kF32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return type == ScaleType::kBF16 ? bf16_to_float(h) : half_to_float(h);
}

using Dot = float (*)(const std::uint32_t*, std::int64_t, int, const float*);
Dot dot_for(int bits) { return bits == 4 ? dot_q4 : dot_q8; }

// The columns [col0, col0+cols) cut at group edges: a block of a tensor-parallel
// split need not start on one.
struct Segment {
  std::int64_t first;  // stored column
  int count, offset;   // elements, and where they start in x's row
  std::int64_t group;
};

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

}  // namespace

float dot_q4(const std::uint32_t* row, std::int64_t first, int n, const float* x) {
  float sum = 0;
  for (int i = 0; i < n; ++i) {
    const std::int64_t j = first + i;
    sum += static_cast<float>((row[j >> 3] >> ((j & 7) * 4)) & 0xFu) * x[i];
  }
  return sum;
}

float dot_q8(const std::uint32_t* row, std::int64_t first, int n, const float* x) {
  float sum = 0;
  for (int i = 0; i < n; ++i) {
    const std::int64_t j = first + i;
    sum += static_cast<float>((row[j >> 2] >> ((j & 3) * 8)) & 0xFFu) * x[i];
  }
  return sum;
}

void affine_linear(std::span<const float> x, int n, const AffineRows& w, int rows, std::int64_t col0, int cols,
                   std::span<float> y, bool accumulate) {
  const std::vector<Segment> segs = segments(w, col0, cols);
  // Σx per segment and input row: the bias term, shared by every output row.
  std::vector<float> xsum(segs.size() * n);
  for (int t = 0; t < n; ++t)
    for (std::size_t k = 0; k < segs.size(); ++k) {
      const float* xs = x.data() + static_cast<std::size_t>(t) * cols + segs[k].offset;
      float s = 0;
      for (int i = 0; i < segs[k].count; ++i) s += xs[i];
      xsum[t * segs.size() + k] = s;
    }
  const Dot dot = dot_for(w.bits);
  std::vector<float> acc(n);
  for (int r = 0; r < rows; ++r) {
    const std::uint32_t* words = w.q + r * w.row_words;
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (std::size_t k = 0; k < segs.size(); ++k) {
      const std::int64_t g = r * w.row_groups + segs[k].group;
      const float scale = load_scale(w.scales, w.scale_type, g), bias = load_scale(w.biases, w.scale_type, g);
      for (int t = 0; t < n; ++t)
        acc[t] += scale * dot(words, segs[k].first, segs[k].count,
                              x.data() + static_cast<std::size_t>(t) * cols + segs[k].offset) +
                  bias * xsum[t * segs.size() + k];
    }
    for (int t = 0; t < n; ++t) {
      float& out = y[static_cast<std::size_t>(t) * rows + r];
      out = accumulate ? out + acc[t] : acc[t];
    }
  }
}

void affine_row(const AffineRows& w, std::int64_t r, std::int64_t col0, int cols, std::span<float> out) {
  const Dot dot = dot_for(w.bits);
  for (int i = 0; i < cols; ++i) {
    const std::int64_t j = col0 + i, g = r * w.row_groups + j / w.group;
    const float one = 1.0f;
    // The value itself: scale·q + bias, q read by the same dot as the products.
    out[i] = load_scale(w.scales, w.scale_type, g) * dot(w.q + r * w.row_words, j, 1, &one) +
             load_scale(w.biases, w.scale_type, g);
  }
}

}  // namespace engine::cpu
