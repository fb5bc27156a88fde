// How fast the simulator runs the default scenario: decode tokens per
// wall-second and simulated seconds per wall second at batch 1 and 8 (one
// core), per node count (1 to 6 M3 Ultras, Qwen3-235B, two requests), at the
// message level and at the flow level, SimGrid events (comms started and
// sleeps) and scheduling rounds (instants the clock stops at) per simulated
// token, and the engine against a raw SimGrid loop that replays the same
// messages and sleeps (per-message overhead sleeps included) without the
// engine. The last lines print ratios.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <simgrid/s4u.hpp>
#include <vector>

#include "engine/base/build_info.hpp"
#include "engine/cards/stack_profile.hpp"
#include "engine/input/scenario.hpp"
#include "engine/input/scenario_file.hpp"
#include "engine/node/scheduler.hpp"
#include "engine/plan/cost_model.hpp"
#include "sim/child_run.hpp"
#include "sim/platform.hpp"
#include "sim/scenario_run.hpp"
#include "sim/simulation.hpp"

namespace {

namespace sg4 = simgrid::s4u;

struct Figures {
  double wall_s = 0, simulated_s = 0, tokens = 0, events = 0, rounds = 0;
};

const std::string kDefault = std::string(engine::kSourceDir) + "/scenarios/default.json";

const engine::Scenario& default_scenario() {
  static const engine::Scenario s = engine::load_scenario(kDefault, engine::Catalog::builtin());
  return s;
}

// The default scenario on `n` M3 Ultras 512 GB, two requests; tensor parallel
// where the heads divide, uneven tensor parallel (3, 5, 6) where they do not.
engine::Scenario scenario_with_nodes(int n) {
  std::ifstream in(kDefault);
  nlohmann::json j = nlohmann::json::parse(in);
  j["cluster"]["nodes"] = nlohmann::json::array();
  for (int i = 1; i <= n; ++i)
    j["cluster"]["nodes"].push_back({{"name", fmt::format("m{}", i)}, {"hardware", "m3-ultra-512gb"}});
  j["parallelism"] = 64 % n == 0 && 4 % n == 0 ? "tensor" : "tensor-uneven";
  j["workload"]["requests"] = 2;
  return engine::parse_scenario(j.dump(), kDefault, engine::Catalog::builtin());
}

// Figures of every run, by a label of ours (Debian's Google Benchmark 1.7 has
// no State::name()), for the ratio lines at the end.
std::map<std::string, Figures>& measured() {
  static std::map<std::string, Figures> m;
  return m;
}

// Comms posted (one per send) and actor sleeps: the events SimGrid schedules
// for us (Debian's 3.32 exports Comm::on_send, not on_start). Rounds: each
// instant SimGrid advances its clock to and wakes the actors due then; actors
// that wake together share one round's work.
struct Counts {
  double events = 0, rounds = 0;
};

std::shared_ptr<Counts> count_scheduling() {
  auto counts = std::make_shared<Counts>();
  sg4::Comm::on_send_cb([counts](const sg4::Comm&) { counts->events += 1; });
  sg4::Actor::on_sleep_cb([counts](const sg4::Actor&) { counts->events += 1; });
  sg4::Engine::on_time_advance_cb([counts](double) { counts->rounds += 1; });
  return counts;
}

Figures in_child(const std::function<Figures()>& fn) {
  const auto r = sim::run_in_child([&] {
    const Figures f = fn();
    return fmt::format("{:.17g} {:.17g} {:.17g} {:.17g} {:.17g}", f.wall_s, f.simulated_s, f.tokens, f.events,
                       f.rounds);
  });
  if (!r.ok) throw std::runtime_error(r.output);
  Figures f;
  std::istringstream(r.output) >> f.wall_s >> f.simulated_s >> f.tokens >> f.events >> f.rounds;
  return f;
}

Figures run_engine(const engine::Scenario& s) {
  const auto& catalog = engine::Catalog::builtin();
  const auto profile = engine::StackProfile::load(catalog.dir(), s.profile);
  const auto plan = engine::make_plan(s, catalog, s.parallelism.value());
  auto counts = count_scheduling();
  const auto start = std::chrono::steady_clock::now();
  const auto result = sim::simulate(s, catalog, plan, profile, engine::make_requests(s.workload, s.seed));
  Figures f;
  f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  f.simulated_s = result.end_s;
  for (const auto& r : result.requests) f.tokens += static_cast<double>(r.token_times.size());
  f.events = counts->events;
  f.rounds = counts->rounds;
  return f;
}

// The default scenario's decode step at batch 1 on bare s4u: rank 0 sends the
// step's plan to the others; per layer a sleep, a one-shot all-reduce (3 puts,
// each after the link's per-message overhead sleep, and 3 gets), a sleep,
// another all-reduce; then the LM head's sleep and the all-gather of each
// rank's best token. The plan's sends start the ranks a few microseconds
// apart, and they stay apart, so SimGrid wakes them one at a time as it does
// the engine's. Its mailboxes are the engine's kind (a permanent receiver:
// transfers start when sent), looked up once, so the loop costs SimGrid's work
// and nothing else.
Figures run_raw(double tokens) {
  const engine::Scenario& s = default_scenario();
  const auto& catalog = engine::Catalog::builtin();
  const auto profile = engine::StackProfile::load(catalog.dir(), s.profile);
  const auto plan = engine::make_plan(s, catalog, s.parallelism.value());
  const auto& model = catalog.model(s.model);
  const engine::CostModel cost(model, model.quant(s.quant), catalog.hardware(plan.shards[0].hardware), profile,
                               plan.shards[0]);
  engine::StepShape shape{1, 1, 600, 600, 1};
  const double attention = cost.attention(0, shape).seconds, ffn = cost.ffn(0, shape).seconds,
               lm_head = cost.lm_head(shape, plan.shards[0].vocab_fraction).seconds;
  const int n = static_cast<int>(s.nodes.size());
  const engine::LinkCard& link = catalog.link(s.fabric.link);
  const engine::StepPlan step{{engine::Slot{0, 1, 600, false, true, {}}}};
  const double bytes = engine::wire_bytes(link, model.hidden * 2.0), overhead = link.per_message_overhead_s,
               plan_bytes = engine::wire_bytes(link, static_cast<double>(step.serialize().size())),
               best_token_bytes = engine::wire_bytes(link, 8);
  sim::Simulation simulation(sim::platform_from_scenario(s, catalog));
  auto counts = count_scheduling();
  auto end_s = std::make_shared<double>(0);
  std::vector<std::vector<sg4::Mailbox*>> box(n, std::vector<sg4::Mailbox*>(n));  // [from][to]
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) box[a][b] = sg4::Mailbox::by_name(fmt::format("raw{}-{}", a, b));
  std::vector<sg4::ActorPtr> actors;
  for (int r = 0; r < n; ++r) {
    actors.push_back(sg4::Actor::create("raw", sg4::Host::by_name(simulation.platform().hosts[r]), [=] {
      static int payload;  // s4u needs a non-null payload to know this side sends
      auto send = [&](int to, double size) {
        sg4::this_actor::sleep_for(overhead);
        box[r][to]->put_init(&payload, size)->detach();
      };
      auto exchange = [&](double size) {
        for (int k = 1; k < n; ++k) send((r + k) % n, size);
        for (int k = 1; k < n; ++k) box[(r - k + n) % n][r]->get<void>();
      };
      for (int t = 0; t < tokens; ++t) {
        if (r == 0)
          for (int k = 1; k < n; ++k) send(k, plan_bytes);
        else
          box[0][r]->get<void>();
        for (int l = 0; l < model.layers; ++l) {
          sg4::this_actor::sleep_for(attention);
          exchange(bytes);
          sg4::this_actor::sleep_for(ffn);
          exchange(bytes);
        }
        sg4::this_actor::sleep_for(lm_head);
        exchange(best_token_bytes);
      }
      *end_s = std::max(*end_s, sg4::Engine::get_clock());
    }));
  }
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b) box[a][b]->set_receiver(actors[b]);
  const auto start = std::chrono::steady_clock::now();
  Figures f;
  simulation.run();
  f.simulated_s = *end_s;
  f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  f.tokens = tokens;
  f.events = counts->events;
  f.rounds = counts->rounds;
  return f;
}

void report(benchmark::State& state, const std::string& label, const Figures& f) {
  measured()[label] = f;
  state.counters["tokens_per_wall_s"] = f.tokens / f.wall_s;
  state.counters["simulated_over_wall"] = f.simulated_s / f.wall_s;
  state.counters["events_per_token"] = f.events / f.tokens;
  state.counters["rounds_per_token"] = f.rounds / f.tokens;
}

engine::SimulationLevel level_of(benchmark::State& state, int arg) {
  return static_cast<engine::SimulationLevel>(state.range(arg));
}

void BM_DefaultScenario(benchmark::State& state) {
  Figures f;
  for (auto _ : state) {
    f = in_child([&] {
      engine::Scenario s = default_scenario();
      s.workload.concurrency = static_cast<int>(state.range(0));
      s.level = level_of(state, 1);
      return run_engine(s);
    });
    state.SetIterationTime(f.wall_s);
  }
  report(state, fmt::format("default scenario, batch {}/{}", state.range(0), engine::to_string(level_of(state, 1))), f);
}

// The engine on the default scenario at batch 1 (message level) against the
// raw loop with the same decode token count, alternated kPairs times so that
// this machine's drift hits both alike. The ratio is the pairs' median.
constexpr int kPairs = 5;

struct Pairs {
  std::vector<double> ratios;  // engine over raw, wall s per decode token, sorted
  Figures engine, raw;         // the last pair's
};

Pairs& engine_against_raw() {
  static Pairs p;
  return p;
}

void BM_EngineAgainstRawLoop(benchmark::State& state) {
  Pairs& p = engine_against_raw();
  for (auto _ : state) {
    double wall_s = 0;
    for (int i = 0; i < kPairs; ++i) {
      p.engine = in_child([] {
        engine::Scenario s = default_scenario();
        s.workload.concurrency = 1;
        s.level = engine::SimulationLevel::kMessage;
        return run_engine(s);
      });
      p.raw = in_child([] { return run_raw(8 * 128); });
      p.ratios.push_back((p.engine.wall_s / p.engine.tokens) / (p.raw.wall_s / p.raw.tokens));
      wall_s += p.engine.wall_s + p.raw.wall_s;
    }
    state.SetIterationTime(wall_s);
  }
  std::sort(p.ratios.begin(), p.ratios.end());
  state.counters["median_ratio"] = p.ratios[p.ratios.size() / 2];
  state.counters["rounds_per_token_engine"] = p.engine.rounds / p.engine.tokens;
  state.counters["rounds_per_token_raw"] = p.raw.rounds / p.raw.tokens;
}

void BM_NodeCount(benchmark::State& state) {
  Figures f;
  for (auto _ : state) {
    f = in_child([&] {
      engine::Scenario s = scenario_with_nodes(static_cast<int>(state.range(0)));
      s.level = level_of(state, 1);
      return run_engine(s);
    });
    state.SetIterationTime(f.wall_s);
  }
  report(state,
         fmt::format("{} nodes, Qwen3-235B, 2 requests/{}", state.range(0), engine::to_string(level_of(state, 1))), f);
}

// Second argument: 0 the message level, 1 the flow level.
BENCHMARK(BM_DefaultScenario)
    ->ArgNames({"batch", "level"})
    ->ArgsProduct({{1, 8}, {0, 1}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_EngineAgainstRawLoop)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_NodeCount)
    ->ArgNames({"nodes", "level"})
    ->ArgsProduct({{1, 2, 3, 4, 5, 6}, {0, 1}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// Simulated seconds per wall second against the targets (10x at batch
// 1 and per node count, 30x at batch 8), and the engine against the raw loop.
void print_ratios() {
  const auto& m = measured();
  auto speed = [&](const std::string& name) {
    const auto f = m.find(name);
    return f == m.end() ? 0.0 : f->second.simulated_s / f->second.wall_s;
  };
  fmt::print("\nsimulated seconds per wall second\n{:<36} {:>8} {:>8} {:>8} {:>12}\n", "run", "message", "flow",
             "target", "flow/message");
  auto line = [&](const std::string& name, double target) {
    const double message = speed(name + "/message"), flow = speed(name + "/flow");
    fmt::print("{:<36} {:>8.2f} {:>8.2f} {:>8.0f} {:>12.2f}\n", name, message, flow, target, flow / message);
  };
  line("default scenario, batch 1", 10);
  line("default scenario, batch 8", 30);
  for (int n = 1; n <= 6; ++n) line(fmt::format("{} nodes, Qwen3-235B, 2 requests", n), 10);
  const Pairs& p = engine_against_raw();
  if (p.ratios.empty()) return;
  fmt::print("engine / raw SimGrid loop, wall s per decode token: median {:.2f} ({:.2f}-{:.2f} over {} alternations; "
             "target 1.2 or less); rounds per token {:.0f} / {:.0f}, events per token {:.0f} / {:.0f}\n",
             p.ratios[p.ratios.size() / 2], p.ratios.front(), p.ratios.back(), p.ratios.size(),
             p.engine.rounds / p.engine.tokens, p.raw.rounds / p.raw.tokens, p.engine.events / p.engine.tokens,
             p.raw.events / p.raw.tokens);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  print_ratios();
  benchmark::Shutdown();
  return 0;
}
