#include "sim/studies/calibration_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <nlopt.hpp>
#include <stdexcept>

#include "engine/input/workload.hpp"
#include "engine/report/bottleneck.hpp"
#include "engine/report/report.hpp"
#include "sim/child_run.hpp"
#include "sim/scenario_run.hpp"
#include "sim/studies/worker_pool.hpp"

namespace sim {

namespace {

using nlohmann::json;

// Per node, one decode token (report/bottleneck.hpp), its terms summed into
// compute, communication and waiting.
json breakdown(const engine::Scenario& s, const engine::RunResult& r) {
  json nodes = json::array();
  for (std::size_t n = 0; n < r.nodes.size(); ++n) {
    const auto t = engine::node_terms(r.nodes[n], engine::StepKind::kDecode);
    if (!t) continue;
    nodes.push_back({{"node", s.nodes[n].name},
                     {"hardware", s.nodes[n].hardware},
                     {"token_s", t->token_s},
                     {"compute_s", t->compute_s()},
                     {"comm_s", t->comm_s()},
                     {"wait_s", t->waiting_s}});
  }
  return nodes;
}

// The child's side of run_row: plan, simulate, summarise as JSON.
std::string simulate_in_child(const engine::CalibrationRow& row, const engine::Scenario& s,
                              const engine::Catalog& catalog, const engine::StackProfile& profile) {
  engine::Plan plan;
  try {
    plan = choose_plan(s, catalog, profile).plan;
  } catch (const engine::PlanError& e) {
    return json{{"refusal", e.what()}}.dump();
  }
  const auto result = simulate(s, catalog, plan, profile, engine::make_requests(s.workload, s.seed));
  for (const auto& rec : result.requests)
    if (!rec.error.empty()) throw std::runtime_error(rec.error);
  const auto report = engine::build_report(s, catalog, plan, profile.name, result, s.seed);
  const char* metric = row.prefill ? "prefill_tokens_per_s" : "decode_tokens_per_s";
  return json{{"tokens_per_s", report["summary"][metric]},
              {"ttft_s", report["summary"]["ttft_s"]["p50"]},
              {"strategy", plan.strategy},
              {"nodes", row.prefill ? json::array() : breakdown(s, result)}}
      .dump();
}

}  // namespace

namespace {

RowRun parse_run(const std::string& output) {
  const json j = json::parse(output);
  RowRun run;
  if (j.contains("refusal")) {
    run.refusal = j["refusal"];
    return run;
  }
  run.tokens_per_s = j["tokens_per_s"];
  run.ttft_s = j["ttft_s"];
  run.strategy = j["strategy"];
  for (const auto& n : j["nodes"])
    run.nodes.push_back({n["node"], n["hardware"], n["token_s"], n["compute_s"], n["comm_s"], n["wait_s"]});
  return run;
}

}  // namespace

RowRun run_row(const engine::CalibrationRow& row, const std::vector<std::string>& cluster,
               const engine::Catalog& catalog, const engine::StackProfile& profile, const std::string& link) {
  const engine::Scenario s = engine::row_scenario(row, cluster, link);
  const ChildResult child = run_in_child([&] { return simulate_in_child(row, s, catalog, profile); });
  if (!child.ok) throw std::runtime_error(fmt::format("{}: simulation failed: {}", row.label(), child.output));
  return parse_run(child.output);
}

std::vector<RowRun> run_rows(const std::vector<engine::CalibrationRow>& rows, const std::vector<std::string>& cluster,
                             const engine::Catalog& catalog, const Profiles& profiles, int jobs) {
  const auto results = run_parallel(static_cast<int>(rows.size()), jobs, [&](int i) {
    const auto& row = rows[i];
    return simulate_in_child(row, engine::row_scenario(row, cluster), catalog, profiles.at(row.stack));
  });
  std::vector<RowRun> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!results[i].ok)
      throw std::runtime_error(fmt::format("{}: simulation failed: {}", rows[i].label(), results[i].output));
    out.push_back(parse_run(results[i].output));
  }
  return out;
}

std::vector<double> simulate_rows(const std::vector<engine::CalibrationRow>& rows,
                                  const std::vector<std::string>& cluster, const engine::Catalog& catalog,
                                  const Profiles& profiles, int jobs) {
  std::vector<double> out;
  const auto runs = run_rows(rows, cluster, catalog, profiles, jobs);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!runs[i].refusal.empty()) throw std::runtime_error(rows[i].label() + ": " + runs[i].refusal);
    out.push_back(runs[i].tokens_per_s);
  }
  return out;
}

namespace {

// NLopt sees every parameter scaled to [0, 1], so one step size suits all.
struct Objective {
  const std::vector<engine::CalibrationRow>& rows;
  const std::vector<std::string>& cluster;
  const engine::Catalog& catalog;
  const std::vector<engine::FitParameter>& parameters;
  int jobs;
  Profiles profiles;
  int evaluations = 0;
  double best = HUGE_VAL;  // the lowest error seen over every start, and where
  std::vector<double> best_x = {};

  void apply(const std::vector<double>& x) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto& p = parameters[i];
      for (const auto& stack : p.stacks)
        if (auto at = profiles.find(stack); at != profiles.end())
          at->second.set(p.key, p.lower + x[i] * (p.upper - p.lower));
    }
  }

  double operator()(const std::vector<double>& x) {
    apply(x);
    ++evaluations;
    const double error = engine::squared_error(simulate_rows(rows, cluster, catalog, profiles, jobs), rows);
    if (error < best) {
      best = error;
      best_x = x;
    }
    return error;
  }
};

}  // namespace

FitResult fit_profiles(const std::vector<engine::CalibrationRow>& rows, const std::vector<std::string>& cluster,
                       const engine::Catalog& catalog, const Profiles& start,
                       const std::vector<engine::FitParameter>& parameters, int max_evaluations, int jobs) {
  Objective objective{rows, cluster, catalog, parameters, jobs, start};
  std::vector<double> x;
  for (const auto& p : parameters)
    x.push_back(std::clamp((start.at(p.stacks.at(0)).get(p.key) - p.lower) / (p.upper - p.lower), 0.0, 1.0));
  if (!x.empty()) {
    nlopt::opt opt(nlopt::LN_BOBYQA, static_cast<unsigned>(x.size()));
    opt.set_lower_bounds(0.0);
    opt.set_upper_bounds(1.0);
    opt.set_initial_step(0.1);
    // A thousandth of each parameter's range, and of the error: the rows tell nothing finer, and every
    // evaluation simulates every row.
    opt.set_xtol_abs(1e-3);
    opt.set_ftol_rel(1e-3);
    opt.set_min_objective([](const std::vector<double>& v, std::vector<double>&,
                             void* data) { return (*static_cast<Objective*>(data))(v); },
                          &objective);
    // The objective has kinks (a kernel costs the larger of its memory and compute times) where BOBYQA's
    // quadratic model fails and its trust region collapses far from the minimum: one start stopped at
    // up to eight times the error a restart reaches. So it starts again from the best point, with a
    // fresh step, until a start gains less than a thousandth. (BOBYQA moves a start that lies near a
    // bound, so a start can end worse than it began: the best point is kept apart.)
    for (double before = HUGE_VAL; objective.evaluations < max_evaluations; before = objective.best) {
      opt.set_maxeval(max_evaluations - objective.evaluations);
      try {
        double found = 0;
        opt.optimize(x, found);
      } catch (const nlopt::roundoff_limited&) {
        // Stopped where rounding hides any gain: the best point is kept all the same.
      }
      x = objective.best_x;
      if (!(objective.best < before * (1 - 1e-3))) break;
    }
    objective.apply(x);
  }
  FitResult fit{objective.profiles, simulate_rows(rows, cluster, catalog, objective.profiles, jobs), 0,
                objective.evaluations};
  fit.squared_error = engine::squared_error(fit.simulated, rows);
  return fit;
}

}  // namespace sim
