// How fast the simulator runs the default scenario: decode tokens per
// wall-second at batch 1 and 8 (one core), SimGrid events (comms started and
// sleeps) per simulated token, and the engine against a raw SimGrid loop that
// replays the same message and sleep pattern without the engine.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <chrono>
#include <simgrid/s4u.hpp>

#include "engine/cost_model.hpp"
#include "engine/scenario.hpp"
#include "engine/stack_card.hpp"
#include "sim/isolated.hpp"
#include "sim/scenario_run.hpp"
#include "sim/simulation.hpp"

namespace {

namespace sg4 = simgrid::s4u;

struct Figures {
  double wall_s = 0, simulated_s = 0, tokens = 0, events = 0;
};

const engine::Scenario& default_scenario() {
  static const engine::Scenario s =
      engine::load_scenario(std::string(MESHINFER_SOURCE_DIR) + "/scenarios/default.json", engine::Catalog::builtin());
  return s;
}

// Comms posted (one per send) and actor sleeps: the events SimGrid schedules
// for us. (Debian's 3.32 exports Comm::on_send, not on_start.)
std::shared_ptr<double> count_events() {
  auto events = std::make_shared<double>(0);
  sg4::Comm::on_send_cb([events](const sg4::Comm&) { *events += 1; });
  sg4::Actor::on_sleep_cb([events](const sg4::Actor&) { *events += 1; });
  return events;
}

Figures in_child(const std::function<Figures()>& fn) {
  const auto r = sim::run_isolated([&] {
    const Figures f = fn();
    return fmt::format("{:.17g} {:.17g} {:.17g} {:.17g}", f.wall_s, f.simulated_s, f.tokens, f.events);
  });
  if (!r.ok) throw std::runtime_error(r.output);
  Figures f;
  std::istringstream(r.output) >> f.wall_s >> f.simulated_s >> f.tokens >> f.events;
  return f;
}

Figures run_engine(int batch) {
  engine::Scenario s = default_scenario();
  s.workload.concurrency = batch;
  const auto& catalog = engine::Catalog::builtin();
  const auto profile = engine::StackCard::load(catalog.dir(), s.profile);
  const auto plan = engine::make_plan(s, catalog, s.parallelism.value());
  auto events = count_events();
  const auto start = std::chrono::steady_clock::now();
  const auto result = sim::simulate(s, catalog, plan, profile, engine::make_requests(s.workload, s.seed));
  Figures f;
  f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  f.simulated_s = result.end_s;
  for (const auto& r : result.requests) f.tokens += static_cast<double>(r.token_times.size());
  f.events = *events;
  return f;
}

// The default scenario's decode pattern at batch 1 on bare s4u: per layer a
// sleep, a one-shot all-reduce (3 puts, 3 gets), a sleep, another all-reduce.
Figures run_raw(double tokens) {
  const engine::Scenario& s = default_scenario();
  const auto& catalog = engine::Catalog::builtin();
  const auto profile = engine::StackCard::load(catalog.dir(), s.profile);
  const auto plan = engine::make_plan(s, catalog, s.parallelism.value());
  const auto& model = catalog.model(s.model);
  const engine::CostModel cost(model, model.quant(s.quant), catalog.hardware(plan.shards[0].hardware), profile,
                               plan.shards[0]);
  engine::StepShape shape{1, 1, 600, 600, 1};
  const double attention = cost.attention_s(0, shape), ffn = cost.ffn_s(0, shape);
  const int n = static_cast<int>(s.nodes.size());
  const double bytes = model.hidden * 2.0;
  sim::Simulation simulation(sim::platform_from_scenario(s, catalog));
  auto events = count_events();
  auto end_s = std::make_shared<double>(0);
  for (int r = 0; r < n; ++r) {
    sg4::Actor::create("raw", sg4::Host::by_name(simulation.platform().hosts[r]), [=] {
      static int payload;  // s4u needs a non-null payload to know this side sends
      auto all_reduce = [&] {
        for (int k = 1; k < n; ++k)
          sg4::Mailbox::by_name(fmt::format("raw{}-{}", r, (r + k) % n))->put_init(&payload, bytes)->detach();
        for (int k = 1; k < n; ++k) sg4::Mailbox::by_name(fmt::format("raw{}-{}", (r - k + n) % n, r))->get<void>();
      };
      for (int t = 0; t < tokens; ++t)
        for (int l = 0; l < model.layers; ++l) {
          sg4::this_actor::sleep_for(attention);
          all_reduce();
          sg4::this_actor::sleep_for(ffn);
          all_reduce();
        }
      *end_s = std::max(*end_s, sg4::Engine::get_clock());
    });
  }
  const auto start = std::chrono::steady_clock::now();
  Figures f;
  simulation.run();
  f.simulated_s = *end_s;
  f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  f.tokens = tokens;
  f.events = *events;
  return f;
}

void report(benchmark::State& state, const Figures& f) {
  state.counters["tokens_per_wall_s"] = f.tokens / f.wall_s;
  state.counters["simulated_over_wall"] = f.simulated_s / f.wall_s;
  state.counters["events_per_token"] = f.events / f.tokens;
}

void BM_DefaultScenario(benchmark::State& state) {
  Figures f;
  for (auto _ : state) {
    f = in_child([&] { return run_engine(static_cast<int>(state.range(0))); });
    state.SetIterationTime(f.wall_s);
  }
  report(state, f);
}

// Same decode token count as the batch-1 run, without the engine.
void BM_RawSimGridSamePattern(benchmark::State& state) {
  Figures f;
  for (auto _ : state) {
    f = in_child([&] { return run_raw(8 * 128); });
    state.SetIterationTime(f.wall_s);
  }
  report(state, f);
}

BENCHMARK(BM_DefaultScenario)
    ->ArgName("batch")
    ->Arg(1)
    ->Arg(8)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_RawSimGridSamePattern)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
