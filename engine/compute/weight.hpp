// A weight matrix as CpuBackend multiplies by it: a [rows x cols] block of a
// stored matrix, either f32 (read in place from the mapped file when its
// bytes are aligned, else from a copy) or MLX affine-quantized (the packed
// words, scales and biases, in place at any alignment; never expanded).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "engine/compute/affine_kernels.hpp"

namespace engine {

class Weight {
 public:
  Weight() = default;
  // `keep` holds what the pointers point into (the mapped checkpoint, or a copy).
  static Weight dense(const float* data, std::int64_t ld, int rows, int cols, std::shared_ptr<const void> keep);
  static Weight affine(const cpu::AffineRows& w, std::int64_t col0, int rows, int cols,
                       std::shared_ptr<const void> keep);

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  bool quantized() const { return f32_ == nullptr && rows_ > 0; }
  // Whether it computes from its own copy rather than the mapped file.
  bool copied() const { return copied_; }
  void set_copied(bool c) { copied_ = c; }

  // y[n x rows] (+)= x[n x cols] · Wᵀ, on `pool`'s threads (none: this one; the same result).
  void linear(std::span<const float> x, int n, std::span<float> y, bool accumulate = false,
              cpu::ThreadPool* pool = nullptr) const;
  // The products of one x by several weights, y (+)= x · Wᵀ each, as linear
  // gives them one by one: x prepared once, and their pieces in one job,
  // where every weight is quantized in groups of one size over the same columns.
  // REQUIRES: at least one product.
  struct Product {
    const Weight* w;
    std::span<float> y;
    bool accumulate = false;
  };
  static void linear(std::span<const float> x, int n, std::span<const Product> products,
                     cpu::ThreadPool* pool = nullptr);
  // Row r as floats (an embedding lookup).
  void row(int r, std::span<float> out) const;
  // Maps the pages of the file it is read from now, rather than a fault at a
  // time in the first product (nothing to do for a copy).
  void prefault() const;

 private:
  const float* f32_ = nullptr;
  std::int64_t ld_ = 0;
  cpu::AffineRows affine_;
  std::int64_t col0_ = 0;
  int rows_ = 0, cols_ = 0;
  bool copied_ = false;
  std::shared_ptr<const void> keep_;
};

}  // namespace engine
