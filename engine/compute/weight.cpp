#include "engine/compute/weight.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/compute/cpu_ops.hpp"

namespace engine {

namespace {

// The page tables for [p, p+bytes) of a mapped file, filled in one call (Linux
// 5.14+): faulting them in one by one on first use cost more than the first
// step's math, the threads splitting a matrix contending for its page-table
// lock. Elsewhere, or if refused, the pages fault in on first use as before.
void populate(const void* p, std::size_t bytes) {
#ifdef MADV_POPULATE_READ
  static const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(p) & ~(page - 1);
  ::madvise(reinterpret_cast<void*>(begin), reinterpret_cast<std::uintptr_t>(p) + bytes - begin, MADV_POPULATE_READ);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace

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

void Weight::linear(std::span<const float> x, int n, std::span<const Product> products, cpu::ThreadPool* pool) {
  const Weight& first = *products.front().w;
  const bool shared = std::all_of(products.begin(), products.end(), [&](const Product& p) {
    return p.w->quantized() && p.w->col0_ == first.col0_ && p.w->cols_ == first.cols_ &&
           p.w->affine_.group == first.affine_.group;
  });
  if (!shared) {
    for (const Product& p : products) p.w->linear(x, n, p.y, p.accumulate, pool);
    return;
  }
  std::vector<cpu::AffineProduct> affine;
  for (const Product& p : products) affine.push_back({&p.w->affine_, p.w->rows_, p.y, p.accumulate});
  cpu::affine_linear(x, n, first.col0_, first.cols_, affine, pool);
}

void Weight::row(int r, std::span<float> out) const {
  if (f32_)
    std::copy_n(f32_ + r * ld_, cols_, out.begin());
  else
    cpu::affine_row(affine_, r, col0_, cols_, out);
}

void Weight::prefault() const {
  if (copied_ || rows_ == 0) return;
  if (f32_) {
    populate(f32_, ((rows_ - 1) * ld_ + cols_) * sizeof(float));
    return;
  }
  // Whole rows: a block of columns covers nearly all of each row's pages anyway.
  const std::size_t sb = affine_.scale_type == cpu::ScaleType::kF32 ? 4 : 2;
  populate(affine_.q, rows_ * affine_.row_words * 4);
  populate(affine_.scales, rows_ * affine_.row_groups * sb);
  populate(affine_.biases, rows_ * affine_.row_groups * sb);
}

}  // namespace engine
