#include "engine/compute/weight.hpp"

#include <algorithm>

#include "engine/compute/cpu_ops.hpp"

namespace engine {

Weight Weight::dense(const float* data, std::int64_t ld, int rows, int cols, std::shared_ptr<const void> keep) {
  Weight w;
  w.f32_ = data;
  w.ld_ = ld;
  w.rows_ = rows;
  w.cols_ = cols;
  w.keep_ = std::move(keep);
  return w;
}

Weight Weight::affine(const cpu::AffineRows& rows_of, std::int64_t col0, int rows, int cols,
                      std::shared_ptr<const void> keep) {
  Weight w;
  w.affine_ = rows_of;
  w.col0_ = col0;
  w.rows_ = rows;
  w.cols_ = cols;
  w.keep_ = std::move(keep);
  return w;
}

void Weight::linear(std::span<const float> x, int n, std::span<float> y, bool accumulate,
                    cpu::ThreadPool* pool) const {
  if (n == 0 || rows_ == 0) return;
  if (f32_)
    cpu::linear(x, n, cols_, f32_, rows_, y, accumulate, static_cast<int>(ld_), pool);
  else
    cpu::affine_linear(x, n, affine_, rows_, col0_, cols_, y, accumulate, pool);
}

void Weight::row(int r, std::span<float> out) const {
  if (f32_)
    std::copy_n(f32_ + r * ld_, cols_, out.begin());
  else
    cpu::affine_row(affine_, r, col0_, cols_, out);
}

}  // namespace engine
