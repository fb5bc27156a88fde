#include "sim/studies/chaos.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

#include "engine/cards/stack_profile.hpp"
#include "engine/faults/oracle.hpp"
#include "engine/input/workload.hpp"
#include "engine/node/invariants.hpp"
#include "engine/report/report.hpp"
#include "sim/scenario_run.hpp"
#include "sim/studies/worker_pool.hpp"

namespace sim {

namespace {

using json = nlohmann::ordered_json;

double uniform(std::mt19937_64& rng, double lo, double hi) { return lo + (hi - lo) * ((rng() >> 11) * 0x1.0p-53); }

json run_one(const engine::Scenario& s, const engine::Catalog& catalog) {
  const auto profile = engine::StackProfile::load(catalog.dir(), s.profile);
  const auto plan = choose_plan(s, catalog, profile).plan;
  const auto result = simulate(s, catalog, plan, profile, engine::make_requests(s.workload, s.seed));
  const json report = engine::build_report(s, catalog, plan, profile.name, result, s.seed);
  json checks = json::array();
  for (const auto& c : engine::check_invariants(s, result))
    checks.push_back({{"invariant", c.name}, {"violations", c.violations}});
  return {{"summary", report["summary"]},
          {"faults", report["faults"]},
          {"invariants", report["invariants"]},
          {"invariant_checks", checks},
          {"oracle", engine::judge_run(s, catalog, report)},
          {"events", report["events"]}};
}

}  // namespace

std::vector<engine::FaultSpec> chaos_faults(const engine::Scenario& s, const std::vector<engine::FaultKind>& kinds,
                                            unsigned long long seed, double span_s) {
  std::mt19937_64 rng(seed);
  const int count = 1 + static_cast<int>(rng() % 3);
  std::vector<engine::FaultSpec> out;
  for (int i = 0; i < count; ++i) {
    engine::FaultSpec f;
    f.kind = kinds[rng() % kinds.size()];
    f.at_s = uniform(rng, 0.05 * span_s, 0.8 * span_s);
    if (engine::on_link(f.kind)) {
      const auto& c = s.fabric.cables[rng() % s.fabric.cables.size()];
      f.node = c.a;
      f.peer = c.b;
      f.target = s.nodes[c.a].name + "-" + s.nodes[c.b].name;
    } else if (engine::on_node(f.kind)) {
      f.node = static_cast<int>(rng() % s.nodes.size());
      f.target = s.nodes[f.node].name;
    }
    if (f.kind == engine::FaultKind::kLinkDegrade) {
      f.factor = uniform(rng, 0.1, 0.9);
      f.added_latency_s = uniform(rng, 0, 1e-3);
    }
    if (f.kind == engine::FaultKind::kNodeSlow) f.factor = uniform(rng, 0.2, 0.9);
    if (f.kind == engine::FaultKind::kLinkFlap) {
      f.period_s = uniform(rng, 0.05, 0.5);
      f.duty = uniform(rng, 0.1, 0.6);
    }
    if (f.kind != engine::FaultKind::kLinkUp && f.kind != engine::FaultKind::kNodeRestart &&
        f.kind != engine::FaultKind::kRdmaStackFailure && f.kind != engine::FaultKind::kNodeCrash)
      f.duration_s = uniform(rng, 0.1, 0.5 * span_s);
    out.push_back(f);
  }
  // Stable: std::sort orders ties differently in each standard library.
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.at_s < b.at_s; });
  return out;
}

json run_chaos(const engine::Scenario& s, const engine::Catalog& catalog, const ChaosQuery& q) {
  // The fault-free run sets the span faults fall in and the throughput they cost.
  engine::Scenario calm = s;
  calm.faults.clear();
  const auto base = run_in_child([&] { return run_one(calm, catalog).dump(); });
  if (!base.ok) throw std::runtime_error("the fault-free run failed: " + base.output);
  const json baseline = json::parse(base.output);
  const double span = baseline["summary"]["simulated_s"].get<double>();
  const double base_speed = baseline["summary"]["decode_tokens_per_s"].get<double>();

  const int n = static_cast<int>(q.last_seed - q.first_seed + 1);
  const auto results = run_items(n, q.workers, [&](int i) {
    engine::Scenario chaotic = s;
    chaotic.seed = q.first_seed + i;
    chaotic.faults = chaos_faults(s, q.kinds, chaotic.seed, span);
    return run_one(chaotic, catalog).dump();
  });

  json seeds = json::array();
  std::map<std::string, int> failed_by_cause;
  std::vector<double> recoveries;
  std::vector<unsigned long long> violating, flagged;  // broke an invariant or crashed; judged wrong by the oracle
  json violation_schedules = json::object();           // by seed: the first violation, and the faults that replay it
  double lost = 0;
  for (int i = 0; i < n; ++i) {
    const unsigned long long seed = q.first_seed + i;
    json schedule = json::array();
    for (const auto& f : chaos_faults(s, q.kinds, seed, span)) schedule.push_back(engine::fault_json(f));
    json row{{"seed", seed}, {"schedule", schedule}};
    if (!results[i].ok) {
      row["crashed"] = results[i].output;  // the simulation itself died: as bad as a violation
      violating.push_back(seed);
      violation_schedules[std::to_string(seed)] = {{"why", "the simulation crashed: " + results[i].output},
                                                   {"faults", schedule}};
      seeds.push_back(row);
      continue;
    }
    const json r = json::parse(results[i].output);
    row["invariants"] = r["invariants"];
    row["invariant_checks"] = r["invariant_checks"];
    row["oracle"] = r["oracle"];
    row["faults"] = r["faults"];
    row["decode_tokens_per_s"] = r["summary"]["decode_tokens_per_s"];
    row["events"] = r["events"];
    if (!r["invariants"].empty()) violating.push_back(seed);
    if (!r["oracle"].empty()) flagged.push_back(seed);
    if (!r["invariants"].empty() || !r["oracle"].empty()) {
      const json& why = r["invariants"].empty() ? r["oracle"] : r["invariants"];
      violation_schedules[std::to_string(seed)] = {{"why", why[0]}, {"faults", schedule}};
    }
    if (!r["faults"]["time_to_recover_s"].is_null()) recoveries.push_back(r["faults"]["downtime_s"].get<double>());
    // Grouped by the cause's head ("instance failed", "refused", ...), not its particulars.
    for (const auto& [cause, count] : r["faults"]["failed_by_cause"].items())
      failed_by_cause[cause.substr(0, cause.find(':'))] += count.get<int>();
    const double served =
        r["summary"]["output_tokens"].get<double>() / std::max(r["summary"]["simulated_s"].get<double>(), 1e-9);
    const double base_served = baseline["summary"]["output_tokens"].get<double>() / std::max(span, 1e-9);
    lost += std::max(0.0, 1 - served / base_served);
    seeds.push_back(row);
  }
  json causes = json::object();
  for (const auto& [cause, count] : failed_by_cause) causes[cause] = count;
  const double mean_recovery =
      recoveries.empty() ? 0 : std::accumulate(recoveries.begin(), recoveries.end(), 0.0) / recoveries.size();
  return {{"schema", "meshinfer.chaos/1"},
          {"scenario", s.name},
          {"simulation_level", engine::to_string(s.level)},
          {"seeds", {q.first_seed, q.last_seed}},
          {"kinds", q.kinds},
          {"baseline", {{"simulated_s", span}, {"decode_tokens_per_s", base_speed}}},
          {"seeds_run", n},
          {"violations", violating},
          {"oracle_violations", flagged},
          {"violation_schedules", violation_schedules},
          {"recoveries", recoveries.size()},
          {"mean_recovery_s", mean_recovery},
          {"worst_recovery_s", recoveries.empty() ? 0.0 : *std::max_element(recoveries.begin(), recoveries.end())},
          {"failed_by_cause", causes},
          {"mean_throughput_lost", n ? lost / n : 0.0},
          {"runs", seeds}};
}

std::string render_chaos_table(const json& c) {
  std::string out = fmt::format("chaos on {}: seeds {}..{}, faults drawn from {}\n", c["scenario"].get<std::string>(),
                                c["seeds"][0].get<unsigned long long>(), c["seeds"][1].get<unsigned long long>(),
                                fmt::join(c["kinds"].get<std::vector<std::string>>(), ", "));
  out += fmt::format(
      "| seeds run | invariant violations | oracle violations | recoveries | mean recovery s | worst recovery s | "
      "throughput lost |\n"
      "|---|---|---|---|---|---|---|\n| {} | {} | {} | {} | {:.3f} | {:.3f} | {:.1f}% |\n",
      c["seeds_run"].get<int>(), c["violations"].size(), c["oracle_violations"].size(), c["recoveries"].get<int>(),
      c["mean_recovery_s"].get<double>(), c["worst_recovery_s"].get<double>(),
      100 * c["mean_throughput_lost"].get<double>());
  // The schedule pasted into the scenario's "faults" replays the seed with `meshinfer run`.
  for (const auto& [seed, v] : c["violation_schedules"].items())
    out += fmt::format("violation at seed {0}: {1}\n  replay with --seeds {0}..{0}; its faults: {2}\n", seed,
                       v["why"].get<std::string>(), v["faults"].dump());
  out += "requests failed by cause:\n";
  if (c["failed_by_cause"].empty()) out += "  none\n";
  for (const auto& [cause, count] : c["failed_by_cause"].items())
    out += fmt::format("  {:>5}  {}\n", count.get<int>(), cause);
  return out;
}

}  // namespace sim
