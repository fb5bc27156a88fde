// Simulated all-reduce throughput (collectives per wall-second) on a 4-node
// tb5-rdma mesh, side by side with a raw SimGrid put/get loop that moves the
// same messages, and the ratio: what the engine's layers cost on top of SimGrid.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <chrono>
#include <simgrid/s4u.hpp>

#include "engine/cards/catalog.hpp"
#include "engine/node/collectives.hpp"
#include "sim/child_run.hpp"
#include "sim/simulation.hpp"

namespace {

namespace sg4 = simgrid::s4u;
constexpr int kNodes = 4;
constexpr int kRounds = 2000;

double wall_seconds(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double in_child(const std::function<double()>& fn) {
  const auto r = sim::run_in_child([&] { return fmt::format("{:.17g}", fn()); });
  if (!r.ok) throw std::runtime_error(r.output);
  return std::stod(r.output);
}

double engine_all_reduces(double bytes, engine::AllReduceAlgorithm algo) {
  const auto& card = engine::Catalog::builtin().link("tb5-rdma");
  sim::Simulation simulation(sim::full_mesh(kNodes, card));
  simulation.spawn_all([&](engine::Runtime& rt) {
    auto buf = engine::CollectiveBuffer::sized(static_cast<std::uint64_t>(bytes) / 2, 2);
    for (int i = 0; i < kRounds; ++i) engine::all_reduce({rt, 1, 10.0}, buf, algo);
  });
  return wall_seconds([&] { simulation.run(); });
}

// The same messages as the engine's algorithm, straight on s4u mailboxes.
double raw_put_get(double bytes, engine::AllReduceAlgorithm algo) {
  const auto& card = engine::Catalog::builtin().link("tb5-rdma");
  sim::Simulation simulation(sim::full_mesh(kNodes, card));
  const bool two_shot = algo == engine::AllReduceAlgorithm::kTwoShot;
  const double msg = two_shot ? bytes / kNodes : bytes;
  const int phases = two_shot ? 2 : 1;
  static int payload;  // s4u needs a non-null payload to know which side sends
  for (int r = 0; r < kNodes; ++r) {
    sg4::Actor::create("raw" + std::to_string(r), sg4::Host::by_name(simulation.platform().hosts[r]), [=] {
      for (int i = 0; i < kRounds * phases; ++i) {
        std::vector<sg4::CommPtr> sends;
        for (int s = 1; s < kNodes; ++s)
          sends.push_back(
              sg4::Mailbox::by_name(fmt::format("raw{}-{}", r, (r + s) % kNodes))->put_async(&payload, msg));
        for (int s = 1; s < kNodes; ++s)
          sg4::Mailbox::by_name(fmt::format("raw{}-{}", (r - s + kNodes) % kNodes, r))->get<void>();
        for (auto& c : sends) c->wait();
      }
    });
  }
  return wall_seconds([&] { simulation.run(); });
}

void BM_AllReduceVsRawSimGrid(benchmark::State& state) {
  const double bytes = static_cast<double>(state.range(0));
  const auto& card = engine::Catalog::builtin().link("tb5-rdma");
  const auto algo =
      engine::choose_all_reduce(kNodes, bytes, card.bandwidth, card.latency_s + card.per_message_overhead_s, true);
  double engine_s = 0, raw_s = 0;
  for (auto _ : state) {
    engine_s = in_child([&] { return engine_all_reduces(bytes, algo); });
    raw_s = in_child([&] { return raw_put_get(bytes, algo); });
    state.SetIterationTime(engine_s);
  }
  state.SetLabel(std::string(engine::name(algo)));
  state.counters["engine_allreduce_per_s"] = kRounds / engine_s;
  state.counters["raw_putget_rounds_per_s"] = kRounds / raw_s;
  state.counters["engine_over_raw_time"] = engine_s / raw_s;
}

BENCHMARK(BM_AllReduceVsRawSimGrid)
    ->Arg(16 << 10)
    ->Arg(16 << 20)
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
