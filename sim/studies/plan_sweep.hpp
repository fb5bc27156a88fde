// Capacity planning: enumerate candidate clusters (node count, hardware mix,
// link, parallelism), drop what cannot work with the reason, simulate the
// rest under the workload, and rank them against an SLO and a price.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/input/scenario.hpp"
#include "sim/studies/worker_pool.hpp"

namespace sim {

struct PlanQuery {
  std::string model, quant;
  std::vector<std::string> hardware;  // cards to mix
  int max_nodes = 4;
  std::vector<std::string> links;
  std::vector<engine::Strategy> strategies;
  engine::Workload workload;
  double slo_ttft_s = 0, slo_itl_s = 0;  // 0: no bound
  std::string profile = "meshinfer";
  Workers workers;
  unsigned long long seed = 1;
  engine::SimulationLevel level = engine::SimulationLevel::kFlow;
};

// The whole sweep as plan.json: query, candidates (kept and dropped, with
// figures or reasons), the cheapest meeting the SLO, the fastest, and why
// the others lose; scaling: the first hardware card, link and strategy on
// 1, 2, 4 ... up to max_nodes nodes (scaling.hpp; not in a shard's results).
// Deterministic whatever the job count.
nlohmann::ordered_json run_plan_sweep(const PlanQuery& q, const engine::Catalog& catalog);

std::string render_plan_markdown(const nlohmann::ordered_json& plan);
// "TTFT p99 <= 2 s, ITL p99 <= 80 ms", or "none" when neither bound is given (0).
// "SLO: TTFT p99 <= 2 s, ITL p99 <= 80 ms" and `end`; "" without an SLO, so no output claims one nobody gave.
std::string slo_text(double ttft_s, double itl_s, const std::string& end);
// A candidate of plan.json in a line: "2x m3-ultra-512gb / tb5-rdma / tensor".
std::string describe_candidate(const nlohmann::ordered_json& candidate);
std::string render_plan_table(const nlohmann::ordered_json& plan);  // for stdout
// What a plan's scaling view scaled: "qwen3-235b-a22b on m3-ultra-512gb, tb5-rdma".
std::string scaling_subject(const nlohmann::ordered_json& plan);

}  // namespace sim
