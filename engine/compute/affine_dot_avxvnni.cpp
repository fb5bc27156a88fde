// AVX-VNNI row dots (affine_dot_x86.hpp) on dpbusd, which multiplies unsigned
// by signed bytes in fours into int32 without saturating: one instruction per
// 32 products where AVX2 takes five. Dequantization is AVX2's. Compiled for
// AVX-VNNI function by function, and used only where the CPU has it.
#include "engine/compute/affine_dot.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

#include <vector>
#define MESHINFER_TARGET __attribute__((target("avx2,fma,avxvnni")))

namespace engine::cpu {

namespace {

constexpr std::int32_t kOffset = 0;

MESHINFER_TARGET inline __m256i dot32(__m256i acc, __m256i q, __m256i x, bool) {
  return _mm256_dpbusd_avx_epi32(acc, q, x);
}

#include "engine/compute/affine_dot_x86.hpp"

// CPUID leaf 7, subleaf 1, EAX bit 4 (Intel SDM): clang 14's __builtin_cpu_supports knows no "avxvnni".
bool has_avxvnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
}

}  // namespace

const AffineKernels* avxvnni_kernels() {
  const AffineKernels* avx2 = avx2_kernels();
  static const bool usable = avx2 && has_avxvnni();  // once: CPUID traps to the hypervisor in a VM
  if (!usable) return nullptr;
  static const AffineKernels k{"avx-vnni", avx2->quantize, row_dot<4>,     row_dot<8>,
                               nullptr,    nullptr,        avx2->dequant4, avx2->dequant8};
  return &k;
}

}  // namespace engine::cpu

#else

namespace engine::cpu {
const AffineKernels* avxvnni_kernels() { return nullptr; }
}  // namespace engine::cpu

#endif
