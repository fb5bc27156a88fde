#include "sim/studies/scaling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "engine/cards/stack_profile.hpp"
#include "engine/input/workload.hpp"
#include "engine/plan/planner.hpp"
#include "engine/report/bottleneck.hpp"
#include "sim/scenario_run.hpp"

namespace sim {

namespace {

using json = nlohmann::ordered_json;

constexpr int kOutputTokens = 16;  // enough decode steps for a steady ITL, as plan's batch-1 trial

// 1, 2, 4, ... below `n`, then `n`.
std::vector<int> node_counts(int n) {
  std::vector<int> counts;
  for (int k = 1; k < n; k *= 2) counts.push_back(k);
  counts.push_back(n);
  return counts;
}

// `s` cut down to its first `n` nodes and the cables among them, steady (no
// faults, no expectations), on the cost model alone (no model directory).
engine::Scenario first_nodes(const engine::Scenario& s, int n) {
  engine::Scenario cut = s;
  cut.nodes.resize(n);
  cut.fabric.cables.clear();
  for (const engine::Cable& c : s.fabric.cables)
    if (c.a < n && c.b < n) cut.fabric.cables.push_back(c);
  cut.faults.clear();
  cut.expectations.clear();
  cut.model_dir.clear();
  cut.level = engine::SimulationLevel::kFlow;
  return cut;
}

std::vector<engine::Request> one_request(const engine::Scenario& s) {
  auto requests = engine::make_requests(s.workload, s.seed);
  requests.resize(1);
  requests[0].output_tokens = kOutputTokens;
  requests[0].arrival_s = 0;
  return requests;
}

// The child's side: one node count's plan, run and decode terms.
std::string simulate_point(const engine::Scenario& s, engine::Strategy strategy, const engine::Catalog& catalog,
                           const engine::StackProfile& profile) {
  engine::Plan plan;
  try {
    plan = engine::make_plan(s, catalog, strategy);
  } catch (const engine::PlanError& e) {
    return json{{"status", "dropped"}, {"reason", e.what()}}.dump();
  }
  const auto result = simulate(s, catalog, plan, profile, one_request(s));
  json decode = engine::bottleneck_json(s, result)["decode"];
  if (decode.is_null()) throw std::runtime_error("no decode step ran");
  decode.erase("nodes");
  return json{{"status", "simulated"},
              {"decode_tokens_per_s", decode["tokens"].get<double>() / decode["token_s"].get<double>()},
              {"decode", decode}}
      .dump();
}

// The terms past perfect scaling from `before` (on `n_before` nodes) to `now` (on `n`), most first.
std::vector<json> past_perfect_scaling(const json& before, int n_before, const json& now, int n) {
  std::vector<json> terms;
  for (const auto& t : engine::term_names())
    terms.push_back({{"term", t.key},
                     {"name", t.name},
                     {"excess_s", now[t.key].get<double>() - before[t.key].get<double>() * n_before / n}});
  std::stable_sort(terms.begin(), terms.end(), [](const json& a, const json& b) {
    return a["excess_s"].get<double>() > b["excess_s"].get<double>();
  });
  return terms;
}

}  // namespace

json scaling_view(const engine::Scenario& s, engine::Strategy strategy, const engine::Catalog& catalog, int jobs) {
  const auto profile = engine::StackProfile::load(catalog.dir(), s.profile);
  const std::vector<int> counts = node_counts(static_cast<int>(s.nodes.size()));
  const auto results = run_parallel(static_cast<int>(counts.size()), jobs, [&](int i) {
    return simulate_point(first_nodes(s, counts[i]), strategy, catalog, profile);
  });
  const auto request = one_request(s).front();
  json out{{"workload", fmt::format("1 request of {} prompt + {} output tokens", request.prompt_tokens, kOutputTokens)},
           {"strategy", strategy},
           {"points", json::array()}};
  json& points = out["points"];
  std::optional<std::size_t> previous;  // the last simulated point
  for (std::size_t i = 0; i < counts.size(); ++i) {
    json point{{"nodes", counts[i]}, {"hardware", json::array()}};
    for (int n = 0; n < counts[i]; ++n) point["hardware"].push_back(s.nodes[n].hardware);
    if (!results[i].ok) {
      point["status"] = "failed";
      point["reason"] = results[i].output;
    } else {
      point.update(json::parse(results[i].output));
    }
    const bool simulated = point["status"] == "simulated";
    if (simulated && previous) {
      const json& p = points[*previous];
      point["speedup"] = point["decode_tokens_per_s"].get<double>() / p["decode_tokens_per_s"].get<double>();
      const auto terms = past_perfect_scaling(p["decode"], p["nodes"].get<int>(), point["decode"], counts[i]);
      point["limit"] = terms[0];
      if (terms[1]["excess_s"].get<double>() > 0) point["then"] = terms[1];
    }
    if (simulated) previous = points.size();
    points.push_back(std::move(point));
  }
  return out;
}

}  // namespace sim
