#!/usr/bin/env bash
# The affine kernel tests (affine_simd_test.cpp, affine_kernels_test.cpp) built
# for aarch64 and run under qemu: the NEON kernels against the scalar ones on a
# machine without NEON. Needs Debian's g++-aarch64-linux-gnu, qemu-user and
# googletest's sources (/usr/src/googletest). The engine's few other needs are
# stubbed: CBLAS by naive loops (only ThreadsDoNotChangeABit's f32 products
# use it), half_to_float by its definition.
# Usage: tests/engine/compute/neon-qemu.sh [gtest flags]. Not part of ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=${OUT:-/tmp/meshinfer-neon-qemu}
gtest=/usr/src/googletest/googletest
mkdir -p "$out/include"
cat >"$out/include/cblas.h" <<'EOF'
#pragma once
enum CBLAS_ORDER { CblasRowMajor = 101 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };
extern "C" {
void cblas_sgemv(CBLAS_ORDER, CBLAS_TRANSPOSE, int m, int n, float alpha, const float* a, int lda, const float* x,
                 int incx, float beta, float* y, int incy);
void cblas_sgemm(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc);
}
EOF
cat >"$out/stubs.cpp" <<'EOF'
#include <cblas.h>
#include <cmath>
#include <cstdint>
extern "C" void openblas_set_num_threads(int) {}
extern "C" void cblas_sgemv(CBLAS_ORDER, CBLAS_TRANSPOSE t, int m, int n, float alpha, const float* a, int lda,
                            const float* x, int, float beta, float* y, int) {
  for (int i = 0; i < (t == CblasNoTrans ? m : n); ++i) {
    float s = 0;
    for (int j = 0; j < (t == CblasNoTrans ? n : m); ++j) s += (t == CblasNoTrans ? a[i * lda + j] : a[j * lda + i]) * x[j];
    y[i] = alpha * s + (beta != 0 ? beta * y[i] : 0);
  }
}
extern "C" void cblas_sgemm(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, int m, int n, int k, float alpha,
                            const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float s = 0;
      for (int p = 0; p < k; ++p) s += a[i * lda + p] * b[j * ldb + p];
      c[i * ldc + j] = alpha * s + (beta != 0 ? beta * c[i * ldc + j] : 0);
    }
}
namespace engine {
float half_to_float(std::uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const float v = e == 0 ? std::ldexp(float(m), -24) : e == 31 ? INFINITY : std::ldexp(float(m | 0x400), e - 25);
  return (h & 0x8000) ? -v : v;
}
}  // namespace engine
EOF
cxx=(aarch64-linux-gnu-g++ -std=c++20 -O2 -ffp-contract=off -I"$root" -I"$out/include" -isystem "$gtest/include")
[ -f "$out/gtest-all.o" ] || "${cxx[@]}" -I"$gtest" -c "$gtest/src/gtest-all.cc" -o "$out/gtest-all.o"
[ -f "$out/gtest_main.o" ] || "${cxx[@]}" -c "$gtest/src/gtest_main.cc" -o "$out/gtest_main.o"
objs=("$out/gtest-all.o" "$out/gtest_main.o")
for src in "$root"/engine/compute/affine_dot*.cpp "$root"/engine/compute/{affine_kernels,thread_pool,cpu_ops}.cpp \
  "$out/stubs.cpp" "$root"/tests/engine/compute/affine_{simd,kernels}_test.cpp; do
  obj=$out/$(basename "$src" .cpp).o
  "${cxx[@]}" -c "$src" -o "$obj"
  objs+=("$obj")
done
aarch64-linux-gnu-g++ -static "${objs[@]}" -lpthread -o "$out/affine_tests"
qemu-aarch64 "$out/affine_tests" "$@"
