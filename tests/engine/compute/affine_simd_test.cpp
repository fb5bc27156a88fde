// The vector kernels (AVX2, AVX-VNNI, AVX-512 and AMX here, NEON on aarch64) against
// the scalar ones on random packed matrices: equal bit for bit, for whole
// groups and for column blocks cut inside groups. And a product on several
// threads equals the one-thread product bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "engine/compute/affine_dot.hpp"
#include "engine/compute/affine_kernels.hpp"
#include "engine/compute/cpu_ops.hpp"
#include "engine/compute/thread_pool.hpp"

namespace {

using namespace engine::cpu;

struct Random {
  std::vector<std::uint32_t> words;
  std::vector<std::uint16_t> scales, biases;  // bf16
  AffineRows rows;
};

Random random_rows(int rows, int in, int bits, int group, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Random m;
  m.words.resize(static_cast<std::size_t>(rows) * in * bits / 32);
  for (auto& w : m.words) w = rng();
  auto bf16 = [](float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return static_cast<std::uint16_t>(b >> 16);
  };
  for (int i = 0; i < rows * (in / group); ++i) {
    m.scales.push_back(bf16(u(rng) * 0.05f));
    m.biases.push_back(bf16(u(rng) * 0.5f));
  }
  m.rows = {m.words.data(), m.scales.data(), m.biases.data(), ScaleType::kBF16,
            bits,           group,           in * bits / 32,  in / group};
  return m;
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> out(n);
  for (float& v : out) v = u(rng);
  return out;
}

// The segments of columns [col0, col0+cols) as affine_kernels.cpp cuts them.
std::vector<Segment> cut(int group, std::int64_t col0, int cols) {
  std::vector<Segment> out;
  for (int off = 0; off < cols;) {
    const std::int64_t j = col0 + off, g = j / group;
    const int count = static_cast<int>(std::min<std::int64_t>((g + 1) * group - j, cols - off));
    out.push_back({j, count, off, g});
    off += count;
  }
  return out;
}

// A row of x quantized per segment, as affine_linear hands it to the row dots.
struct Quantized {
  std::vector<std::int8_t> q;
  std::vector<float> d, x_sum;
  std::vector<std::int32_t> q_sum;
  QuantizedX view() const { return {q.data(), d.data(), q_sum.data(), x_sum.data()}; }
};

Quantized quantize(const std::vector<float>& x, const std::vector<Segment>& segs) {
  Quantized out;
  out.q.resize(x.size());
  for (const Segment& s : segs) {
    const QuantizedSegment q = quantize_segment(x.data() + s.offset, s.count, out.q.data() + s.offset);
    out.d.push_back(q.d);
    out.q_sum.push_back(q.sum);
    out.x_sum.push_back(0);
    for (int i = 0; i < s.count; ++i) out.x_sum.back() += x[s.offset + i];
  }
  return out;
}

std::vector<const AffineKernels*> vector_kernels() {
  std::vector<const AffineKernels*> out;
  for (const AffineKernels* k : {avx2_kernels(), avxvnni_kernels(), avx512_kernels(), amx_kernels(), neon_kernels()})
    if (k) out.push_back(k);
  return out;
}

TEST(AffineSimd, RowDotsAndDequantizationEqualTheScalarKernels) {
  const auto kernels = vector_kernels();
  if (kernels.empty()) GTEST_SKIP() << "no vector kernels on this machine";
  const AffineKernels& scalar = scalar_kernels();
  const int rows = 11, in = 1024;  // 8 groups of 128: the widest run of eight side by side
  for (const AffineKernels* k : kernels)
    for (const int bits : {4, 8})
      for (const int group : {32, 64, 128})
        // Whole rows; a block cut inside groups (a tensor-parallel share); one starting off the 8-element grid.
        for (const auto& [col0, cols] : {std::pair{0, in}, {64, 320}, {40, 150}, {3, 61}}) {
          Random m = random_rows(rows, in, bits, group, bits * 100 + group + col0);
          // The extremes: q = 0 (q-128 = -128, the edge of the sign trick) and q = 2^bits-1.
          std::fill_n(m.words.begin(), in * bits / 32, 0u);
          std::fill_n(m.words.begin() + in * bits / 32, in * bits / 32, ~0u);
          const std::vector<float> x = random_floats(cols, 7 + col0);
          const std::vector<Segment> segs = cut(group, col0, cols);
          const Quantized xq = quantize(x, segs);
          // Scales and biases as bf16 (random_rows), f32 (the same values) and f16 (any normal halves).
          std::vector<float> f32_scales, f32_biases;
          for (std::size_t i = 0; i < m.scales.size(); ++i) {
            f32_scales.push_back(std::bit_cast<float>(std::uint32_t(m.scales[i]) << 16));
            f32_biases.push_back(std::bit_cast<float>(std::uint32_t(m.biases[i]) << 16));
          }
          std::vector<std::uint16_t> f16(m.scales.size());
          for (std::size_t i = 0; i < f16.size(); ++i)
            f16[i] = static_cast<std::uint16_t>(0x1000 + (i * 7919) % 0x3000);
          AffineRows as_f32 = m.rows, as_f16 = m.rows;
          as_f32.scales = f32_scales.data(), as_f32.biases = f32_biases.data(), as_f32.scale_type = ScaleType::kF32;
          as_f16.scales = as_f16.biases = f16.data(), as_f16.scale_type = ScaleType::kF16;
          for (const AffineRows& w : {m.rows, as_f32, as_f16}) {
            std::vector<float> want(rows), got(rows);
            (bits == 4 ? scalar.dot4 : scalar.dot8)(w, 0, rows, segs, xq.view(), want.data());
            (bits == 4 ? k->dot4 : k->dot8)(w, 0, rows, segs, xq.view(), got.data());
            for (int r = 0; r < rows; ++r)
              EXPECT_EQ(got[r], want[r]) << k->isa << ' ' << bits << "-bit, groups of " << group << ", columns " << col0
                                         << "+" << cols << ", row " << r;
          }
          for (const Segment& s : segs) {
            std::vector<float> a(s.count), b(s.count);
            (bits == 4 ? scalar.dequant4 : scalar.dequant8)(m.words.data(), s.first, s.count, 0.3f, -0.7f, a.data());
            (bits == 4 ? k->dequant4 : k->dequant8)(m.words.data(), s.first, s.count, 0.3f, -0.7f, b.data());
            EXPECT_EQ(a, b) << k->isa << ' ' << bits << "-bit, segment at " << s.first;
          }
        }
}

// Rows of x quantized one after the other, as affine_linear hands them to the tile dots.
struct QuantizedMany {
  std::vector<Quantized> rows;
  std::vector<std::int8_t> q;
  std::vector<float> d, x_sum;
  std::vector<std::int32_t> q_sum;
  QuantizedRows view(int cols) const {
    return {q.data(),
            d.data(),
            q_sum.data(),
            x_sum.data(),
            static_cast<int>(rows.size()),
            cols,
            static_cast<int>(d.size() / rows.size())};
  }
};

QuantizedMany quantize_rows(const std::vector<float>& x, int n, const std::vector<Segment>& segs) {
  QuantizedMany out;
  const std::size_t cols = x.size() / n;
  for (int t = 0; t < n; ++t) {
    const Quantized r = quantize({x.begin() + t * cols, x.begin() + (t + 1) * cols}, segs);
    out.q.insert(out.q.end(), r.q.begin(), r.q.end());
    out.d.insert(out.d.end(), r.d.begin(), r.d.end());
    out.x_sum.insert(out.x_sum.end(), r.x_sum.begin(), r.x_sum.end());
    out.q_sum.insert(out.q_sum.end(), r.q_sum.begin(), r.q_sum.end());
    out.rows.push_back(r);
  }
  return out;
}

// A tile dot gives each row of x the scalar row dot's result, bit for bit:
// whole tiles of 16 by 16 (AMX's), the rows of each left over, and blocks of
// columns a matrix unit does not take (groups of 32, cuts inside groups).
TEST(AffineSimd, TileDotsEqualTheScalarRowDots) {
  std::vector<const AffineKernels*> kernels;
  for (const AffineKernels* k : vector_kernels())
    if (k->tile4) kernels.push_back(k);
  if (kernels.empty()) GTEST_SKIP() << "no matrix unit on this machine";
  const AffineKernels& scalar = scalar_kernels();
  const int all_rows = 40, r0 = 3, rows = 35, n = 35, in = 512;
  for (const int bits : {4, 8})
    for (const int group : {32, 64, 128})
      for (const auto& [col0, cols] : {std::pair{0, in}, {64, 320}, {40, 150}}) {
        const Random m = random_rows(all_rows, in, bits, group, bits * 10 + group + col0);
        const std::vector<float> x = random_floats(static_cast<std::size_t>(n) * cols, 11 + col0);
        const std::vector<Segment> segs = cut(group, col0, cols);
        const QuantizedMany xq = quantize_rows(x, n, segs);
        std::vector<float> want(static_cast<std::size_t>(n) * rows);
        for (int t = 0; t < n; ++t)
          (bits == 4 ? scalar.dot4 : scalar.dot8)(m.rows, r0, rows, segs, xq.rows[t].view(), want.data() + t * rows);
        for (const AffineKernels* k : kernels) {
          const TileDot tile = bits == 4 ? k->tile4 : k->tile8;
          std::vector<float> got(want.size(), -1.0f);
          tile(m.rows, r0, rows, segs, xq.view(cols), got.data(), rows, false);
          EXPECT_EQ(got, want) << k->isa << ' ' << bits << "-bit, groups of " << group << ", columns " << col0 << "+"
                               << cols;
          // Accumulating adds each result to what is there: y + v.
          std::vector<float> doubled = want;
          for (float& v : doubled) v += v;
          tile(m.rows, r0, rows, segs, xq.view(cols), got.data(), rows, true);
          EXPECT_EQ(got, doubled) << k->isa << ' ' << bits << "-bit, groups of " << group << ", accumulating";
        }
      }
}

// x/d rounded to nearest, ties to even (as nearbyint), d = max|x|/127.
TEST(AffineSimd, ActivationsQuantizeToNearestTiesToEven) {
  const std::vector<float> x = {127, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -126.6f, 3.49f};
  std::vector<std::int8_t> q(x.size());
  const QuantizedSegment s = quantize_segment(x.data(), static_cast<int>(x.size()), q.data());
  EXPECT_EQ(s.d, 1.0f);
  EXPECT_EQ(q, (std::vector<std::int8_t>{127, 0, 2, 2, 0, -2, -127, 3}));
  EXPECT_EQ(s.sum, 127 + 2 + 2 - 2 - 127 + 3);
  std::vector<float> zero(5, 0.0f);
  EXPECT_EQ(quantize_segment(zero.data(), 5, q.data()).d, 0.0f);
}

// Each vector quantization gives the scalar one's d, Σxq and values: random
// segments of whole vectors and not (the scalar one's then), values on the
// ties of rounding, and an all-zero segment.
TEST(AffineSimd, QuantizationEqualsTheScalar) {
  const auto kernels = vector_kernels();
  if (kernels.empty()) GTEST_SKIP() << "no vector kernels on this machine";
  std::vector<std::vector<float>> cases;
  for (const int n : {32, 64, 128, 61})
    for (const float scale : {1.0f, 1e-3f, 300.0f}) {
      cases.push_back(random_floats(n, n));
      for (float& v : cases.back()) v *= scale;
    }
  cases.emplace_back();
  for (int i = 0; i < 8; ++i)  // d = 1: x·(1/d) is x, and .5 a tie
    for (const float v : {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -126.6f, 3.49f}) cases.back().push_back(v);
  cases.emplace_back(64, 0.0f);
  for (const std::vector<float>& x : cases) {
    const int n = static_cast<int>(x.size());
    std::vector<std::int8_t> want(n), got(n);
    const QuantizedSegment a = quantize_segment(x.data(), n, want.data());
    for (const AffineKernels* k : kernels) {
      const QuantizedSegment b = k->quantize(x.data(), n, got.data());
      EXPECT_EQ(b.d, a.d) << k->isa << ", " << n << " values from " << x[0];
      EXPECT_EQ(b.sum, a.sum) << k->isa << ", " << n << " values from " << x[0];
      EXPECT_EQ(got, want) << k->isa << ", " << n << " values from " << x[0];
    }
  }
}

// MLX's writer does not align tensors: words, scales and biases one byte off
// their alignment give the same results, on every kernel.
TEST(AffineSimd, MisalignedWordsScalesAndBiasesComputeTheSame) {
  const int rows = 6, in = 256;
  auto kernels = vector_kernels();
  kernels.push_back(&scalar_kernels());
  auto shifted = [](const auto& v) {  // v's bytes, starting one byte into the buffer
    auto out = std::make_shared<std::vector<unsigned char>>(v.size() * sizeof(v[0]) + 1);
    std::memcpy(out->data() + 1, v.data(), v.size() * sizeof(v[0]));
    return out;
  };
  for (const int bits : {4, 8}) {
    const Random m = random_rows(rows, in, bits, 64, bits);
    const auto q = shifted(m.words), sc = shifted(m.scales), bi = shifted(m.biases);
    AffineRows off = m.rows;
    off.q = q->data() + 1;
    off.scales = sc->data() + 1;
    off.biases = bi->data() + 1;
    const std::vector<float> x = random_floats(in, 3);
    const std::vector<Segment> segs = cut(64, 0, in);
    const Quantized xq = quantize(x, segs);
    for (const AffineKernels* k : kernels) {
      const RowDot dot = bits == 4 ? k->dot4 : k->dot8;
      std::vector<float> want(rows), got(rows);
      dot(m.rows, 0, rows, segs, xq.view(), want.data());
      dot(off, 0, rows, segs, xq.view(), got.data());
      EXPECT_EQ(got, want) << k->isa << ' ' << bits << "-bit";
      const Dequant dequant = bits == 4 ? k->dequant4 : k->dequant8;
      std::vector<float> a(in), b(in);
      dequant(m.words.data(), 0, in, 0.3f, -0.7f, a.data());
      dequant(off.q, 0, in, 0.3f, -0.7f, b.data());
      EXPECT_EQ(a, b) << k->isa << ' ' << bits << "-bit";
    }
  }
}

// Products computed on 1 thread and on 3 (more than the pieces of some).
TEST(AffineSimd, ThreadsDoNotChangeABit) {
  ThreadPool pool(3);
  const int in = 512;
  for (const int rows : {64, 200, 700})
    for (const int n : {1, 3, kManyRows + 24}) {
      const std::vector<float> x = random_floats(static_cast<std::size_t>(n) * in, rows + n);
      const std::vector<float> w = random_floats(static_cast<std::size_t>(rows) * in, rows);
      std::vector<float> one(static_cast<std::size_t>(n) * rows, 0.5f), many = one;
      linear(x, n, in, w.data(), rows, one, true);
      linear(x, n, in, w.data(), rows, many, true, 0, &pool);
      EXPECT_EQ(one, many) << "f32, " << rows << " rows, " << n << " inputs";
      for (const int bits : {4, 8}) {
        const Random m = random_rows(rows, in, bits, 64, rows * bits);
        std::vector<float> a(static_cast<std::size_t>(n) * rows), b(a.size());
        affine_linear(x, n, m.rows, rows, 0, in, a, false);
        affine_linear(x, n, m.rows, rows, 0, in, b, false, &pool);
        EXPECT_EQ(a, b) << bits << "-bit, " << rows << " rows, " << n << " inputs";
      }
    }
}

// Several products of one x (q, k and v; gate and up) in one call, 4- and
// 8-bit among them, some accumulating: each as it is alone, on the pool too.
TEST(AffineSimd, ProductsOfOneInputEqualEachAlone) {
  ThreadPool pool(2);
  const int in = 512;
  for (const int n : {1, 3, kManyRows + 24}) {
    const std::vector<float> x = random_floats(static_cast<std::size_t>(n) * in, n);
    const Random a = random_rows(300, in, 4, 64, 1), b = random_rows(130, in, 8, 64, 2),
                 c = random_rows(64, in, 4, 64, 3);
    std::vector<std::vector<float>> alone, together;
    std::vector<AffineProduct> products;
    for (const auto* m : {&a, &b, &c}) {
      const int rows = static_cast<int>(m->scales.size()) / (in / 64);
      const bool accumulate = m == &b;
      alone.push_back(random_floats(static_cast<std::size_t>(n) * rows, rows));
      together.push_back(alone.back());
      affine_linear(x, n, m->rows, rows, 0, in, alone.back(), accumulate);
      products.push_back({&m->rows, rows, together.back(), accumulate});
    }
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      std::vector<std::vector<float>> got = together;
      for (std::size_t i = 0; i < products.size(); ++i) products[i].y = got[i];
      affine_linear(x, n, 0, in, products, p);
      EXPECT_EQ(got, alone) << n << " inputs, " << (p ? "on the pool" : "one thread");
    }
  }
}

TEST(ThreadPool, RunsEveryPieceOnceAndPassesOnAnError) {
  ThreadPool pool(3);
  for (int round = 0; round < 50; ++round) {  // jobs back to back: a late worker must not touch the next
    std::vector<std::atomic<int>> seen(97);
    pool.run(97, [&](std::int64_t i) { seen[i].fetch_add(1); });
    for (auto& s : seen) ASSERT_EQ(s.load(), 1);
  }
  EXPECT_THROW(pool.run(10,
                        [](std::int64_t i) {
                          if (i == 7) throw std::runtime_error("piece 7");
                        }),
               std::runtime_error);
  int ran = 0;
  pool.run(1, [&](std::int64_t) { ++ran; });  // still usable
  EXPECT_EQ(ran, 1);
}

}  // namespace
