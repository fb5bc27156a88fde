// On an idle simulated mesh each all-reduce takes its closed-form time.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <simgrid/s4u.hpp>
#include <tuple>

#include "engine/base/enums.hpp"
#include "engine/base/error.hpp"
#include "engine/node/collectives.hpp"
#include "sim/child_run.hpp"
#include "sim/fault_injector.hpp"
#include "sim/simulation.hpp"

namespace {

using engine::AllReduceAlgorithm;

constexpr double kBandwidth = 6.875e9;  // 55 Gb/s
constexpr double kLatency = 4e-6;

// How the mesh is made and the ranks come in: rank r enters at r x stagger_s.
struct Conditions {
  engine::SimulationLevel level = engine::SimulationLevel::kMessage;
  bool switched = false;
  double stagger_s = 0, overhead_s = 0;
  std::vector<engine::WireTime> wire_time_by_size = {};
};

// When the last rank finished the all-reduce.
double simulated_all_reduce_s(int n, double bytes, AllReduceAlgorithm algo, const Conditions& setup = {}) {
  const auto result = sim::run_in_child([&] {
    engine::LinkCard card;
    card.name = "ideal";
    card.bandwidth = kBandwidth;
    card.latency_s = kLatency;
    card.per_message_overhead_s = setup.overhead_s;
    card.switched = setup.switched;
    card.wire_time_by_size = setup.wire_time_by_size;
    sim::Simulation simulation(sim::full_mesh(n, card), setup.level);
    std::vector<double> finished(n);
    simulation.spawn_all([&](engine::Runtime& rt) {
      rt.sleep_for(rt.rank() * setup.stagger_s);
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

std::string algorithm_name(AllReduceAlgorithm a) {
  return a == AllReduceAlgorithm::kRing ? "ring" : a == AllReduceAlgorithm::kOneShot ? "oneshot" : "twoshot";
}

class AllReduceCost : public testing::TestWithParam<std::tuple<int, double, AllReduceAlgorithm>> {};

TEST_P(AllReduceCost, MatchesClosedFormWithinFivePercent) {
  const auto [n, bytes, algo] = GetParam();
  const double expected = engine::all_reduce_cost(algo, n, bytes, kBandwidth, kLatency);
  const double simulated = simulated_all_reduce_s(n, bytes, algo);
  EXPECT_NEAR(simulated, expected, 0.05 * expected) << name(algo) << " n=" << n << " bytes=" << bytes;
}

// The flow level times a collective outside SimGrid (sim/flow_timing.hpp): it
// must find what SimGrid finds message by message, to 0.01%, also when the
// ranks come in one after another and when messages share a switch's ports.
TEST_P(AllReduceCost, FlowLevelFindsTheMessageLevelsTime) {
  const auto [n, bytes, algo] = GetParam();
  for (const bool switched : {false, true})
    for (const double stagger_s : {0.0, 3e-6, 1e-3}) {
      Conditions setup{engine::SimulationLevel::kMessage, switched, stagger_s, 1e-6};
      const double message = simulated_all_reduce_s(n, bytes, algo, setup);
      setup.level = engine::SimulationLevel::kFlow;
      const double flow = simulated_all_reduce_s(n, bytes, algo, setup);
      // SimGrid rounds event times to the nanosecond; a ring pays that at each step.
      EXPECT_NEAR(flow, message, 1e-4 * message) << name(algo) << " n=" << n << " bytes=" << bytes
                                                 << (switched ? " switched" : " cables") << " stagger " << stagger_s;
    }
}

INSTANTIATE_TEST_SUITE_P(Idle, AllReduceCost,
                         testing::Combine(testing::Values(2, 4, 7), testing::Values(16384.0, 16777216.0),
                                          testing::Values(AllReduceAlgorithm::kRing, AllReduceAlgorithm::kOneShot,
                                                          AllReduceAlgorithm::kTwoShot)),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_" +
                                  std::to_string(static_cast<long>(std::get<1>(info.param))) + "B_" +
                                  algorithm_name(std::get<2>(info.param));
                         });

// What each of two nodes makes of a 16 MiB one-shot all-reduce ("done" or
// "timed out") when node r enters it at enter_s[r] and their cable is down
// from down_s to up_s.
std::string outcomes_under_outage(engine::SimulationLevel level, std::array<double, 2> enter_s, double down_s,
                                  double up_s) {
  const auto result = sim::run_in_child([&] {
    engine::LinkCard card;
    card.name = "ideal";
    card.bandwidth = kBandwidth;
    card.latency_s = kLatency;
    sim::Simulation simulation(sim::full_mesh(2, card), level);
    auto* cable = simgrid::s4u::SplitDuplexLink::by_name(sim::cable_link_name(simulation.platform(), 0, 1));
    simgrid::s4u::Actor::create("unplug", simgrid::s4u::Host::by_name(sim::Simulation::kControlHost), [=] {
      simgrid::s4u::this_actor::sleep_until(down_s);
      for (auto* l : {cable->get_link_up(), cable->get_link_down()}) l->turn_off();
      simgrid::s4u::this_actor::sleep_until(up_s);
      for (auto* l : {cable->get_link_up(), cable->get_link_down()}) l->turn_on();
    });
    std::vector<std::string> outcome(2);
    simulation.spawn_all([&](engine::Runtime& rt) {
      rt.sleep_for(enter_s[rt.rank()]);
      auto buf = engine::CollectiveBuffer::sized(8u << 20, 2);
      try {
        engine::all_reduce({rt, 1, 0.1}, buf, AllReduceAlgorithm::kOneShot);
        outcome[rt.rank()] = "done";
      } catch (const engine::Timeout&) {
        outcome[rt.rank()] = "timed out";
      }
    });
    simulation.run();
    return outcome[0] + ", " + outcome[1];
  });
  if (!result.ok) throw std::runtime_error(result.output);
  return result.output;
}

// SimGrid fails a transfer whose cable goes down under it, or that starts on
// a dead cable, even if the cable is back by the time the other node comes
// in. The flow level times the collective when the last node arrives, on the
// links as they are then; it must lose the same messages.
TEST(AllReduceLoss, ACableDownWhileAMessageIsUnderWayLosesItAtBothLevels) {
  for (const auto level : {engine::SimulationLevel::kMessage, engine::SimulationLevel::kFlow}) {
    const std::string at = engine::to_string(level);
    // Both enter at once; the transfers take 2.4 ms, the cable is down from 1 to 1.2 ms.
    EXPECT_EQ(outcomes_under_outage(level, {0, 0}, 1e-3, 1.2e-3), "timed out, timed out") << at;
    // Node 0 sends at 0.2 ms on a dead cable; it is back at 0.5 ms, before node 1 sends at 1 ms.
    EXPECT_EQ(outcomes_under_outage(level, {0.2e-3, 1e-3}, 0.1e-3, 0.5e-3), "done, timed out") << at;
  }
}

// A card measured by size (a shaper lets a 1 KiB message through ten times faster than bulk): a one-shot
// all-reduce of 4 KiB sends each peer one message, which takes the time interpolated between 1 and 64 KiB,
// at both levels.
TEST(AllReduceCostBySize, EachMessageTakesItsSizesTimeAtBothLevels) {
  const double at_1k = 1024 / (10 * kBandwidth), at_64k = 65536 / kBandwidth;
  const std::vector<engine::WireTime> table = {{1024, at_1k}, {65536, at_64k}};
  const double expected = kLatency + at_1k + (at_64k - at_1k) * (4096 - 1024) / (65536 - 1024);
  for (const auto level : {engine::SimulationLevel::kMessage, engine::SimulationLevel::kFlow}) {
    const Conditions setup{level, false, 0, 0, table};
    EXPECT_NEAR(simulated_all_reduce_s(4, 4096, AllReduceAlgorithm::kOneShot, setup), expected, 1e-3 * expected)
        << engine::to_string(level);
  }
}

TEST(ChooseAllReduce, LatencyBoundSmallBandwidthBoundLargeRingWithoutMesh) {
  EXPECT_EQ(engine::choose_all_reduce(4, 16384, kBandwidth, kLatency, true), AllReduceAlgorithm::kOneShot);
  EXPECT_EQ(engine::choose_all_reduce(4, 16 << 20, kBandwidth, kLatency, true), AllReduceAlgorithm::kTwoShot);
  EXPECT_EQ(engine::choose_all_reduce(4, 16 << 20, kBandwidth, kLatency, false), AllReduceAlgorithm::kRing);
}

}  // namespace
