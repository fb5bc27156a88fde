#include "sim/scenario_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>

#include "engine/compute/cpu_backend.hpp"
#include "engine/compute/thread_pool.hpp"
#include "engine/node/recovery.hpp"
#include "sim/child_run.hpp"
#include "sim/fault_injector.hpp"
#include "sim/simulation.hpp"

namespace sim {

engine::RunResult simulate(const engine::Scenario& s, const engine::Catalog& catalog, const engine::Plan& plan,
                           const engine::StackProfile& profile, std::vector<engine::Request> requests,
                           const engine::ProgressFn& progress) {
  refuse_unsimulated(s);
  PlatformSpec platform = platform_from_scenario(s, catalog);
  // The stack's transport adds its own software cost to every message (on hardware it is simply paid).
  for (Wire& w : platform.wires) w.card.per_message_overhead_s += profile.per_message_overhead_s;
  if (platform.secondary) platform.secondary->per_message_overhead_s += profile.per_message_overhead_s;
  Simulation simulation(std::move(platform), s.level);
  double quiet_until = s.deadline_s;
  for (const engine::FaultSpec& f : s.faults) quiet_until = std::min(quiet_until, f.at_s);
  simulation.set_quiet_until(quiet_until);
  engine::RunResult result;
  result.nodes.resize(s.nodes.size());
  engine::EngineSetup setup{s, catalog, plan, profile, std::move(requests), progress, {}};
  // The simulated ranks compute one at a time: each may use every core (the tokens are the same for any count).
  if (!s.model_dir.empty()) setup.backend = engine::cpu_backends(s.model_dir, true, engine::cpu::hardware_threads());
  std::deque<engine::Liveness> members;  // a deque: a Liveness holds a lock, so it does not move
  for (std::size_t r = 0; r < s.nodes.size(); ++r)
    members.emplace_back(static_cast<int>(s.nodes.size()), s.heartbeat_s, s.heartbeat_timeout_s);
  simulation.spawn_all([&](engine::Runtime& rt) { engine::run_node(rt, members[rt.rank()], setup, result); },
                       [&](engine::Runtime& rt) { engine::run_heartbeats(rt, members[rt.rank()]); });
  FaultInjector faults(s, catalog, simulation, result.events);
  faults.start();
  start_deadline_watchdog(s.deadline_s, result.events);
  engine::finish_run(result, simulation.run());
  result.sequences = simulation.sequences();
  for (std::size_t r = 0; r < s.nodes.size(); ++r)
    if (result.nodes[r].error.empty() && !simulation.errors()[r].empty())
      result.nodes[r].error = simulation.errors()[r];
  std::stable_sort(result.events.begin(), result.events.end(),
                   [](const engine::RunEvent& a, const engine::RunEvent& b) { return a.t_s < b.t_s; });
  return result;
}

namespace {

// A slice of the workload long enough to show both prefill and decode speed.
std::vector<engine::Request> trial_requests(const engine::Scenario& s) {
  auto requests = engine::make_requests(s.workload, s.seed);
  const int keep =
      std::min<int>(requests.size(), std::max(1, s.workload.arrival == "closed" ? s.workload.concurrency : 1));
  requests.resize(keep);
  for (auto& r : requests) {
    r.output_tokens = std::min(r.output_tokens, 16);
    r.arrival_s = 0;
  }
  return requests;
}

}  // namespace

PlanChoice choose_plan(const engine::Scenario& s, const engine::Catalog& catalog, const engine::StackProfile& profile) {
  if (s.parallelism) return {engine::make_plan(s, catalog, *s.parallelism), {}};
  // The trials time each strategy; a fault only real processes carry out is left out of them.
  engine::Scenario timed = s;
  std::erase_if(timed.faults, [](const engine::FaultSpec& f) { return !simulated(f.kind); });
  PlanChoice choice;
  std::string reasons;
  double best = 0;
  for (engine::Strategy strategy : engine::all_of<engine::Strategy>()) {
    PlanCandidate c{strategy, "", 0};
    try {
      const engine::Plan plan = engine::make_plan(s, catalog, strategy);
      const ChildResult trial = run_in_child([&] {
        const auto r = simulate(timed, catalog, plan, profile, trial_requests(s));
        for (const auto& rec : r.requests)
          if (!rec.error.empty()) throw std::runtime_error(rec.error);
        return fmt::format("{:.17g}", r.end_s);
      });
      if (!trial.ok) throw engine::PlanError("trial run failed: " + trial.output);
      c.trial_s = std::stod(trial.output);
      if (choice.plan.shards.empty() || c.trial_s < best) {
        choice.plan = plan;
        best = c.trial_s;
      }
    } catch (const engine::PlanError& e) {
      c.refusal = e.what();
      reasons += fmt::format("\n  {}: {}", engine::to_string(strategy), e.what());
    }
    choice.candidates.push_back(c);
  }
  if (choice.plan.shards.empty()) throw engine::PlanError("no parallelism can serve this scenario:" + reasons);
  return choice;
}

}  // namespace sim
