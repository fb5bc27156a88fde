// On an idle simulated mesh each all-reduce takes its closed-form time.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "engine/collectives.hpp"
#include "sim/isolated.hpp"
#include "sim/simulation.hpp"

namespace {

using engine::AllReduceAlgorithm;

constexpr double kBandwidth = 6.875e9;  // 55 Gb/s
constexpr double kLatency = 4e-6;

double simulated_all_reduce_s(int n, double bytes, AllReduceAlgorithm algo) {
  const auto result = sim::run_isolated([&] {
    engine::LinkCard card;
    card.name = "ideal";
    card.bandwidth = kBandwidth;
    card.latency_s = kLatency;
    sim::Simulation simulation(sim::full_mesh(n, card));
    std::vector<double> finished(n);
    simulation.spawn_all([&](engine::Runtime& rt) {
      auto buf = engine::CollectiveBuffer::sized(static_cast<std::uint64_t>(bytes) / 2, 2);
      engine::all_reduce({rt, 1, 10.0}, buf, algo);
      finished[rt.rank()] = rt.now();
    });
    simulation.run();
    return fmt::format("{:.17g}", *std::max_element(finished.begin(), finished.end()));
  });
  if (!result.ok) throw std::runtime_error(result.output);
  return std::stod(result.output);
}

class AllReduceCost : public testing::TestWithParam<std::tuple<int, double, AllReduceAlgorithm>> {};

TEST_P(AllReduceCost, MatchesClosedFormWithinFivePercent) {
  const auto [n, bytes, algo] = GetParam();
  const double expected = engine::all_reduce_cost(algo, n, bytes, kBandwidth, kLatency);
  const double simulated = simulated_all_reduce_s(n, bytes, algo);
  EXPECT_NEAR(simulated, expected, 0.05 * expected) << name(algo) << " n=" << n << " bytes=" << bytes;
}

INSTANTIATE_TEST_SUITE_P(Idle, AllReduceCost,
                         testing::Combine(testing::Values(2, 4, 7), testing::Values(16384.0, 16777216.0),
                                          testing::Values(AllReduceAlgorithm::kRing, AllReduceAlgorithm::kOneShot,
                                                          AllReduceAlgorithm::kTwoShot)),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_" +
                                  std::to_string(static_cast<long>(std::get<1>(info.param))) + "B_" +
                                  (std::get<2>(info.param) == AllReduceAlgorithm::kRing      ? std::string("ring")
                                   : std::get<2>(info.param) == AllReduceAlgorithm::kOneShot ? std::string("oneshot")
                                                                                             : std::string("twoshot"));
                         });

TEST(ChooseAllReduce, LatencyBoundSmallBandwidthBoundLargeRingWithoutMesh) {
  EXPECT_EQ(engine::choose_all_reduce(4, 16384, kBandwidth, kLatency, true), AllReduceAlgorithm::kOneShot);
  EXPECT_EQ(engine::choose_all_reduce(4, 16 << 20, kBandwidth, kLatency, true), AllReduceAlgorithm::kTwoShot);
  EXPECT_EQ(engine::choose_all_reduce(4, 16 << 20, kBandwidth, kLatency, false), AllReduceAlgorithm::kRing);
}

}  // namespace
