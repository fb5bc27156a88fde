// The flow level's deferred time (Simulation::set_quiet_until): an engine
// that sleeps off the end of a collective together with its next compute sees
// the same times as one that sleeps each on its own, and a deadline stops it
// after the same work.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "engine/node/collectives.hpp"
#include "sim/child_run.hpp"
#include "sim/platform.hpp"
#include "sim/simulation.hpp"

namespace {

// Each rank computes a different time, then all-reduces, `rounds` times;
// returns every rank's clock after each round, and the run's end. With
// `rank0_sleeps`, rank 0 sleeps instead of computing: SimGrid's clock then
// moves on while the others, their compute deferred, wait for it.
std::vector<double> round_ends(double quiet_until_s, double deadline_s, int rounds, bool rank0_sleeps = false) {
  const auto result = sim::run_in_child([&] {
    engine::LinkCard card;
    card.name = "ideal";
    card.bandwidth = 6.875e9;
    card.latency_s = 4e-6;
    card.per_message_overhead_s = 3e-6;
    sim::Simulation simulation(sim::full_mesh(3, card), engine::SimulationLevel::kFlow);
    simulation.set_quiet_until(quiet_until_s);
    std::vector<std::vector<double>> ends(3);
    simulation.spawn_all([&](engine::Runtime& rt) {
      for (int i = 0; i < rounds; ++i) {
        const double work = 0.01 * (1 + rt.rank()) + 1e-3 * i;
        if (rank0_sleeps && rt.rank() == 0)
          rt.sleep_for(work + 0.02);  // the last to arrive
        else
          rt.compute(work);
        auto buf = engine::CollectiveBuffer::sized(1 << 25, 2);  // 64 MiB: about 13 ms
        engine::all_reduce({rt, 1, 10.0}, buf, engine::AllReduceAlgorithm::kRing);
        ends[rt.rank()].push_back(rt.now());
      }
      rt.compute(0.5);  // after the last collective: the run ends when it is slept off
    });
    std::vector<engine::RunEvent> log;
    sim::start_deadline_watchdog(deadline_s, log);
    const double end_s = simulation.run();
    for (const std::string& e : simulation.errors())
      if (!e.empty()) throw std::runtime_error(e);
    std::ostringstream out;
    out.precision(17);
    for (const auto& rank : ends)
      for (double t : rank) out << t << ' ';
    out << end_s;
    return out.str();
  });
  if (!result.ok) throw std::runtime_error(result.output);
  std::vector<double> times;
  std::istringstream in(result.output);
  for (double t; in >> t;) times.push_back(t);
  return times;
}

void expect_same_times(const std::vector<double>& deferred, const std::vector<double>& slept) {
  ASSERT_EQ(deferred.size(), slept.size());
  // Summed in another order, the times may differ in their last bits.
  for (std::size_t i = 0; i < slept.size(); ++i) EXPECT_NEAR(deferred[i], slept[i], 1e-12 * slept[i]) << i;
}

TEST(DeferredTime, TheSameRoundsEndAtTheSameTimes) {
  const auto slept = round_ends(0, 100, 20);
  ASSERT_EQ(slept.size(), 3u * 20 + 1);
  EXPECT_GT(slept.back(), slept[20 - 1] + 0.5 - 1e-9);  // the last compute counts
  expect_same_times(round_ends(100, 100, 20), slept);
}

// The others wait for rank 0 while the clock catches up with it: that wait
// is not added to the time they had deferred.
TEST(DeferredTime, WaitingForAMemberThatSleptAddsNothing) {
  const auto slept = round_ends(0, 100, 20, true);
  expect_same_times(round_ends(100, 100, 20, true), slept);
}

// The deadline ends the run inside a collective: an engine that defers stops
// at the quiet's end, so it is killed in the same round, before recording it.
TEST(DeferredTime, ADeadlineStopsTheSameRounds) {
  const auto unbounded = round_ends(0, 100, 10);
  const double deadline = unbounded[5] - 2e-3;  // rank 0's sixth collective, 2 ms before it ends
  const auto slept = round_ends(0, deadline, 10);
  ASSERT_LT(slept.size(), unbounded.size());
  EXPECT_EQ(slept.back(), deadline);
  expect_same_times(round_ends(deadline, deadline, 10), slept);
}

}  // namespace
