#include "support/collective_suite.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "engine/node/collectives.hpp"

namespace testsupport {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::vector<float> rank_data(int rank, std::uint64_t n) {
  std::vector<float> v(n);
  for (std::uint64_t i = 0; i < n; ++i) v[i] = test_value(rank, i);
  return v;
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

}  // namespace

float test_value(int rank, std::uint64_t i) {
  const std::uint64_t h = splitmix64((static_cast<std::uint64_t>(rank) << 40) ^ i);
  return static_cast<float>(h >> 40) / static_cast<float>(1 << 23) - 1.0f;
}

std::uint64_t fnv1a(const void* data, std::size_t n) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

std::string run_collective_suite(engine::Runtime& rt, std::uint64_t elements) {
  const int n = rt.world(), r = rt.rank();
  const double timeout = 120;
  std::vector<double> reference(elements, 0.0);
  for (std::uint64_t i = 0; i < elements; ++i)
    for (int k = 0; k < n; ++k) reference[i] += test_value(k, i);
  std::string digest;
  int tag = 100;
  for (auto algo : {engine::AllReduceAlgorithm::kRing, engine::AllReduceAlgorithm::kOneShot,
                    engine::AllReduceAlgorithm::kTwoShot}) {
    std::vector<float> v = rank_data(r, elements);
    auto buf = engine::CollectiveBuffer::real(v);
    engine::all_reduce({rt, tag++, timeout}, buf, algo);
    for (std::uint64_t i = 0; i < elements; ++i)
      if (!(std::fabs(v[i] - reference[i]) <= 1e-5 * n))
        fail(fmt::format("{} all-reduce wrong at {}: {} vs {}", name(algo), i, v[i], reference[i]));
    digest += fmt::format("{}={:016x} ", name(algo), fnv1a(v.data(), v.size() * sizeof(float)));
  }

  std::vector<float> g = rank_data(r, elements);
  auto gbuf = engine::CollectiveBuffer::real(g);
  engine::all_gather({rt, tag++, timeout}, gbuf);
  for (int k = 0; k < n; ++k) {
    const auto blk = engine::block_of(elements, n, k);
    for (std::uint64_t i = blk.begin; i < blk.begin + blk.count; ++i)
      if (g[i] != test_value(k, i)) fail(fmt::format("all-gather wrong at {}", i));
  }

  const int root = n - 1;
  std::vector<float> b = rank_data(r, elements);
  auto bbuf = engine::CollectiveBuffer::real(b);
  engine::broadcast({rt, tag++, timeout}, bbuf, root);
  for (std::uint64_t i = 0; i < elements; ++i)
    if (b[i] != test_value(root, i)) fail(fmt::format("broadcast wrong at {}", i));

  const std::uint64_t a2a_elements = elements - elements % n;
  if (a2a_elements > 0) {
    std::vector<float> a = rank_data(r, a2a_elements);
    auto abuf = engine::CollectiveBuffer::real(a);
    engine::all_to_all({rt, tag++, timeout}, abuf);
    for (int k = 0; k < n; ++k) {
      const auto mine = engine::block_of(a2a_elements, n, r);
      const auto blk = engine::block_of(a2a_elements, n, k);
      for (std::uint64_t i = 0; i < blk.count; ++i)
        if (a[blk.begin + i] != test_value(k, mine.begin + i)) fail(fmt::format("all-to-all wrong from rank {}", k));
    }
  }
  return digest;
}

}  // namespace testsupport
