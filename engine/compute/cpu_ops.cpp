#include "engine/compute/cpu_ops.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/compute/thread_pool.hpp"

// OpenBLAS's own calls (not part of CBLAS). Its serial build has no threads to
// stop: weak, so that it links too.
extern "C" void openblas_set_num_threads(int);
extern "C" int blas_thread_shutdown_() __attribute__((weak));

namespace engine::cpu {

namespace {

// Products here use one BLAS thread: a rank's threads are its ThreadPool's, and
// the ranks sharing a machine do not fight over its cores. OpenBLAS starts its
// own threads when it is loaded, each spinning on sched_yield for about 0.1 s
// before it sleeps: so pinned, and those stopped, as the process starts (as
// OpenBLAS stops them itself before a fork), not when a backend is made.
[[maybe_unused]] const bool kOneBlasThread = [] {
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_) blas_thread_shutdown_();
  return true;
}();

}  // namespace

void linear_block(const float* x, int n, int in, const float* w, std::int64_t ldw, int out, float* y, int ldy,
                  bool accumulate) {
  const float beta = accumulate ? 1.0f : 0.0f;
  if (n == 1)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, w, static_cast<int>(ldw), x, 1, beta, y, 1);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, static_cast<int>(ldw), beta, y,
                ldy);
}

void linear(std::span<const float> x, int rows, int in, const float* w, int out, std::span<float> y, bool accumulate,
            int ldw, ThreadPool* pool) {
  if (rows == 0 || out == 0) return;
  const std::int64_t ld = ldw ? ldw : in;
  // Blocks of 64 rows keep one row's pass over the weights in parallel without
  // a call per row; sgemm loses ~10% at 256 against one call, less than a thread brings.
  run_blocks(pool, out, rows == 1 ? 64 : 256, [&](int r0, int count) {
    linear_block(x.data(), rows, in, w + r0 * ld, ld, count, y.data() + r0, out, accumulate);
  });
}

void rms_norm(std::span<const float> x, int rows, int dim, std::span<const float> weight, double eps,
              std::span<float> out, ThreadPool* pool) {
  // Rows on the pool: a prefill's norms took 2% of it on one thread while the others waited.
  run_blocks(pool, rows, 16, [&](int first, int count) {
    for (int r = first; r < first + count; ++r) {
      const float* in = x.data() + static_cast<std::size_t>(r) * dim;
      // Four running sums, then theirs: one chain of dim dependent adds was most of a norm's time.
      double part[4] = {};
      int i = 0;
      for (; i + 4 <= dim; i += 4)
        for (int j = 0; j < 4; ++j) part[j] += double(in[i + j]) * in[i + j];
      for (; i < dim; ++i) part[0] += double(in[i]) * in[i];
      const double sum = (part[0] + part[1]) + (part[2] + part[3]);
      const float scale = static_cast<float>(1.0 / std::sqrt(sum / dim + eps));
      for (int i = 0; i < dim; ++i) out[static_cast<std::size_t>(r) * dim + i] = in[i] * scale * weight[i];
    }
  });
}

void rope_angles(int position, std::span<const double> inv_freq, double scale, std::span<float> cos,
                 std::span<float> sin) {
  for (std::size_t i = 0; i < inv_freq.size(); ++i) {
    const double angle = position * inv_freq[i];
    cos[i] = static_cast<float>(scale * std::cos(angle));
    sin[i] = static_cast<float>(scale * std::sin(angle));
  }
}

void rope(std::span<float> head, std::span<const float> cos, std::span<const float> sin) {
  const std::size_t half = head.size() / 2;
  for (std::size_t i = 0; i < half; ++i) {
    const float a = head[i], b = head[i + half];
    head[i] = a * cos[i] - b * sin[i];
    head[i + half] = b * cos[i] + a * sin[i];
  }
}

void attend(const float* q, int ldq, int rows, int n, int causal, const float* keys, const float* values, int stride,
            int d, float* out, int ldo) {
  // Every row's scores in one pass over the keys, and their outputs in one
  // over the values: one sgemv each way per row read the cache once per row.
  // Positions past a row's own get a weight of exactly 0.
  const int last = n + (rows - 1) * causal;  // positions the last row sees
  thread_local std::vector<float> scores;
  scores.resize(static_cast<std::size_t>(rows) * last);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  if (rows == 1)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, d, scale, keys, stride, q, 1, 0.0f, scores.data(), 1);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, last, d, scale, q, ldq, keys, stride, 0.0f,
                scores.data(), last);
  for (int r = 0; r < rows; ++r) {
    float* s = scores.data() + static_cast<std::size_t>(r) * last;
    const int seen = n + r * causal;
    const float best = *std::max_element(s, s + seen);
    float sum = 0;
    for (int i = 0; i < seen; ++i) sum += s[i] = std::exp(s[i] - best);
    for (int i = 0; i < seen; ++i) s[i] /= sum;
    std::fill(s + seen, s + last, 0.0f);
  }
  if (rows == 1)
    cblas_sgemv(CblasRowMajor, CblasTrans, n, d, 1.0f, values, stride, scores.data(), 1, 0.0f, out, 1);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, d, last, 1.0f, scores.data(), last, values, stride,
                0.0f, out, ldo);
}

std::vector<std::pair<int, float>> route(std::span<const float> logits, int k, bool normalize) {
  const float best = *std::max_element(logits.begin(), logits.end());
  std::vector<float> p(logits.size());
  float sum = 0;
  for (std::size_t e = 0; e < p.size(); ++e) sum += p[e] = std::exp(logits[e] - best);
  std::vector<int> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
  std::vector<std::pair<int, float>> out;
  float kept = 0;
  for (int i = 0; i < k; ++i) {
    out.push_back({order[i], p[order[i]] / sum});
    kept += out.back().second;
  }
  if (normalize)
    for (auto& [e, w] : out) w /= kept;
  return out;
}

void swiglu(std::span<float> gate, std::span<const float> up, ThreadPool* pool) {
  // On the pool in pieces of 16K values (a decode step's are one): a prefill's took 5% of it on one thread.
  run_blocks(pool, static_cast<int>(gate.size()), 1 << 14, [&](int first, int count) {
    for (int i = first; i < first + count; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  });
}

}  // namespace engine::cpu
