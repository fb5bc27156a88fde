// Collectives with real data on both runtimes: correct on every rank, and the
// same algorithm gives bitwise-identical floats on SimGrid and on TCP.
#include <gtest/gtest.h>

#include <tuple>

#include "engine/cards/catalog.hpp"
#include "sim/child_run.hpp"
#include "sim/simulation.hpp"
#include "support/collective_suite.hpp"
#include "support/tcp_cluster.hpp"

namespace {

engine::LinkCard test_link() {
  engine::LinkCard card;
  card.name = "test";
  card.bandwidth = 6.25e9;
  card.latency_s = 5e-6;
  card.per_message_overhead_s = 1e-6;
  card.frame_bytes = 4096;
  return card;
}

// Digest of each rank, joined by '|', from one simulation.
sim::ChildResult run_on_simgrid(int n, std::uint64_t elements) {
  return sim::run_in_child([&] {
    sim::Simulation simulation(sim::full_mesh(n, test_link()));
    std::vector<std::string> digests(n);
    simulation.spawn_all(
        [&](engine::Runtime& rt) { digests[rt.rank()] = testsupport::run_collective_suite(rt, elements); });
    simulation.run();
    std::string out;
    for (int r = 0; r < n; ++r) {
      if (!simulation.errors()[r].empty())
        throw std::runtime_error("rank " + std::to_string(r) + ": " + simulation.errors()[r]);
      out += digests[r] + "|";
    }
    return out;
  });
}

class CollectivesBothRuntimes : public testing::TestWithParam<std::tuple<int, std::uint64_t>> {};

TEST_P(CollectivesBothRuntimes, CorrectAndBitwiseEqual) {
  const auto [n, bytes] = GetParam();
  const std::uint64_t elements = std::max<std::uint64_t>(1, bytes / sizeof(float));

  const sim::ChildResult simulated = run_on_simgrid(n, elements);
  ASSERT_TRUE(simulated.ok) << simulated.output;

  const auto tcp = testsupport::run_tcp_cluster(
      n, [&](engine::Runtime& rt) { return testsupport::run_collective_suite(rt, elements); });
  std::string tcp_digests;
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(tcp[r].ok) << "rank " << r << ": " << tcp[r].output;
    tcp_digests += tcp[r].output + "|";
  }
  EXPECT_EQ(simulated.output, tcp_digests);
  // Every rank ends with the same bits.
  const std::string first = tcp[0].output;
  for (int r = 1; r < n; ++r) EXPECT_EQ(tcp[r].output, first) << "rank " << r;
}

std::string case_name(const testing::TestParamInfo<std::tuple<int, std::uint64_t>>& info) {
  return "n" + std::to_string(std::get<0>(info.param)) + "_" + std::to_string(std::get<1>(info.param)) + "B";
}

INSTANTIATE_TEST_SUITE_P(AllWorlds, CollectivesBothRuntimes,
                         testing::Combine(testing::Range(2, 8), testing::Values(4ull, 4096ull + 12, (1ull << 20) + 4)),
                         case_name);
// 64 MiB costs tens of seconds per world on 2 cores (page faults dominate), so
// only the smallest worlds, odd and even, carry the largest size.
INSTANTIATE_TEST_SUITE_P(Largest, CollectivesBothRuntimes,
                         testing::Combine(testing::Values(2, 3), testing::Values(64ull << 20)), case_name);

}  // namespace
