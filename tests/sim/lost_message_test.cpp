// A message a cable outage drops is lost: the next one of the same tag does
// not stand in for it. SimRuntime numbers each peer's messages, and a gap
// fails the peer, as a gap in the frame sequence does on the real transports.
#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>
#include <sstream>
#include <string>

#include "engine/base/error.hpp"
#include "engine/node/collectives.hpp"
#include "sim/child_run.hpp"
#include "sim/fault_injector.hpp"
#include "sim/platform.hpp"
#include "sim/simulation.hpp"

namespace {

namespace sg4 = simgrid::s4u;

constexpr int kTag = 7, kMessages = 10;
constexpr double kEvery = 1e-3;  // rank 0 sends one message of kTag this often

// The cable between ranks 0 and 1 of `simulation` goes down both ways at
// `at` for `for_s` (never when `at` is negative). REQUIRES: before run().
void cut_cable(sim::Simulation& simulation, double at, double for_s) {
  if (at < 0) return;
  sg4::Actor::create("outage", sg4::Host::by_name(sim::Simulation::kControlHost), [&simulation, at, for_s] {
    auto* cable = sg4::SplitDuplexLink::by_name(sim::cable_link_name(simulation.platform(), 0, 1));
    sg4::this_actor::sleep_until(at);
    cable->get_link_up()->turn_off();
    cable->get_link_down()->turn_off();
    sg4::this_actor::sleep_for(for_s);
    cable->get_link_up()->turn_on();
    cable->get_link_down()->turn_on();
  });
}

// What rank 1 took of rank 0's stream until it stopped, in order (each message
// carries its index, and a failed receive shows as "failed: <why>"), then the
// account of the pair: "taken numbered gap". `outage_at`/`for`: the cable is
// down then (none when negative).
std::string stream_across_an_outage(double outage_at, double outage_for) {
  const auto result = sim::run_in_child([&] {
    engine::LinkCard card;
    card.name = "slow";
    card.bandwidth = 1e9;
    card.latency_s = 5e-4;  // each message is on the cable for half a send interval
    sim::Simulation simulation(sim::full_mesh(2, card));
    std::string out;
    simulation.spawn_all([&](engine::Runtime& rt) {
      if (rt.rank() == 0) {
        for (int i = 0; i < kMessages; ++i) {
          const std::byte index{static_cast<unsigned char>(i)};
          rt.send(1, kTag, engine::Payload::of({&index, 1}));
          rt.sleep_for(kEvery);
        }
        return;
      }
      for (;;) {
        try {
          out += std::to_string(static_cast<int>(rt.recv(0, kTag, 0.1).bytes.at(0))) + " ";
        } catch (const engine::PeerFailure& e) {
          out += std::string("failed: ") + e.what() + " ";
        } catch (const engine::Timeout&) {
          return;  // the stream ended
        }
      }
    });
    cut_cable(simulation, outage_at, outage_for);
    simulation.run();
    const engine::Sequence& q = simulation.sequences().at(0 * 2 + 1);
    return out + "| " + std::to_string(q.taken) + " " + std::to_string(q.numbered) + " " +
           (q.gap_s >= 0 ? "gap" : "no-gap");
  });
  if (!result.ok) throw std::runtime_error(result.output);
  return result.output;
}

TEST(LostMessage, AStreamWithoutAnOutageArrivesWhole) {
  EXPECT_EQ(stream_across_an_outage(-1, 0), "0 1 2 3 4 5 6 7 8 9 | 10 10 no-gap");
}

// Message 4, sent at 4 ms, is on the cable when it goes down at 4.2 ms for
// 0.5 ms, far shorter than any heartbeat timeout. Message 5 then arrives where
// message 4 was expected: rank 0 fails at rank 1, which does not take 5 as 4
// (it is dropped with the broken connection). Rank 0's next message starts a
// new one, numbered from 0.
TEST(LostMessage, AShortCableOutageFailsTheSenderInsteadOfDeliveringTheNextMessageAsTheLostOne) {
  EXPECT_EQ(stream_across_an_outage(4.2e-3, 5e-4),
            "0 1 2 3 failed: peer 0 failed: message 5 arrived where message 4 was expected (a message was lost) "
            "6 7 8 9 | 8 8 gap");
}

// At the flow level a collective is timed as a whole, not sent message by
// message. Rank 1's outcome of each of 5 all-reduces of 1 MiB (a new tag
// each): "ok", "timeout" (a message of it was lost) or "failed: <why>"; then
// when each began on rank 0. The cable is down from `outage_at` for
// `outage_for` (none when negative).
std::string collectives_across_an_outage(double outage_at, double outage_for) {
  const auto result = sim::run_in_child([&] {
    engine::LinkCard card;
    card.name = "slow";
    card.bandwidth = 1e9;
    card.latency_s = 5e-4;
    sim::Simulation simulation(sim::full_mesh(2, card), engine::SimulationLevel::kFlow);
    std::string out, starts;
    simulation.spawn_all([&](engine::Runtime& rt) {
      for (int round = 0; round < 5; ++round) {
        rt.sleep_for(0.01);
        if (rt.rank() == 0) starts += std::to_string(rt.now()) + " ";
        auto buf = engine::CollectiveBuffer::sized(1 << 20, 2);
        try {
          engine::all_reduce({rt, 1 + round, 0.05}, buf, engine::AllReduceAlgorithm::kRing);
          if (rt.rank() == 1) out += "ok ";
        } catch (const engine::PeerFailure& e) {
          if (rt.rank() == 1) out += std::string("failed: ") + e.what() + "; ";
        } catch (const engine::Timeout&) {
          if (rt.rank() == 1) out += "timeout ";
        }
      }
    });
    cut_cable(simulation, outage_at, outage_for);
    simulation.run();
    return out + "| " + starts;
  });
  if (!result.ok) throw std::runtime_error(result.output);
  return result.output;
}

// A 0.2 ms outage 1 ms into the third all-reduce drops a message of it: rank 1
// waits for it in vain, and the fourth all-reduce brings rank 0's next message,
// which shows the gap (without numbering, the fourth went on as if nothing was
// lost). Rank 0's fifth starts a new connection.
TEST(LostMessage, AtTheFlowLevelTheNextCollectiveShowsTheGapALostMessageLeft) {
  const std::string calm = collectives_across_an_outage(-1, 0);
  ASSERT_EQ(calm.substr(0, calm.find('|')), "ok ok ok ok ok ");
  std::istringstream starts(calm.substr(calm.find('|') + 1));
  double third = 0;
  for (int i = 0; i < 3; ++i) starts >> third;
  const std::string cut = collectives_across_an_outage(third + 1e-3, 2e-4);
  EXPECT_EQ(cut.substr(0, cut.find('|')),
            "ok ok timeout failed: peer 0 failed: a collective's message arrived after an earlier one was lost; ok ");
}

}  // namespace
