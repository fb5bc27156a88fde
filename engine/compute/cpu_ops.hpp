// The kernels of a Llama/Qwen3 decoder on float32, for CpuBackend: matrix
// products go to BLAS (cblas_sgemv for one row: Debian's OpenBLAS runs its
// sgemm at half the bandwidth there; cblas_sgemm for more) in blocks of
// output rows spread over a ThreadPool, the rest are plain loops.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace engine::cpu {

class ThreadPool;

// y[rows x out] (+)= x[rows x in] · Wᵀ, W the [out x in] weight of a Linear layer
// whose rows lie `ldw` floats apart (0: in; more for a block of columns), on
// `pool`'s threads (none: this thread alone). The blocks of output rows are cut
// by the shape alone, so the result is the same for any number of threads.
void linear(std::span<const float> x, int rows, int in, const float* w, int out, std::span<float> y,
            bool accumulate = false, int ldw = 0, ThreadPool* pool = nullptr);

// One BLAS call on this thread: y[n x out], its rows `ldy` apart, (+)= x[n x in] · Wᵀ.
void linear_block(const float* x, int n, int in, const float* w, std::int64_t ldw, int out, float* y, int ldy,
                  bool accumulate);

// Each row of x[rows x dim] divided by its root mean square, times `weight`,
// on `pool`'s threads (none: this thread alone; the same result).
void rms_norm(std::span<const float> x, int rows, int dim, std::span<const float> weight, double eps,
              std::span<float> out, ThreadPool* pool = nullptr);

// cos and sin of the angles position · inv_freq[i] (engine/checkpoint/rope.hpp),
// times `scale` (YaRN's attention factor), once per position for every head.
void rope_angles(int position, std::span<const double> inv_freq, double scale, std::span<float> cos,
                 std::span<float> sin);
// Rotates one head's vector (Hugging Face rotate_half layout: pairs (i, i + dim/2)).
void rope(std::span<float> head, std::span<const float> cos, std::span<const float> sin);

// `rows` query rows of d values, ldq floats apart (out's ldo apart), against
// one KV head's cache: softmax(q·kᵢ/√d) weighted sum of vᵢ, row r over the
// first n + r·causal positions (causal 0: heads of one token; 1: one head's
// consecutive tokens). keys and values are rows of d values `stride` floats apart.
void attend(const float* q, int ldq, int rows, int n, int causal, const float* keys, const float* values, int stride,
            int d, float* out, int ldo);

// Router: softmax over the experts' logits, the top `k` (ties to the lower
// index), their weights renormalised to sum to one when `normalize`.
std::vector<std::pair<int, float>> route(std::span<const float> logits, int k, bool normalize);

// gate[i] = silu(gate[i]) · up[i]: SwiGLU's activation, on `pool`'s threads (none: this one).
void swiglu(std::span<float> gate, std::span<const float> up, ThreadPool* pool = nullptr);

}  // namespace engine::cpu
