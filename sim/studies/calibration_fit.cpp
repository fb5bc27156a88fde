#include "sim/studies/calibration_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <nlopt.hpp>
#include <stdexcept>

#include "engine/report/report.hpp"
#include "engine/workload.hpp"
#include "sim/isolated.hpp"
#include "sim/scenario_run.hpp"

namespace sim {

namespace {

using nlohmann::json;

// Per node, one decode token: the mean over the decode steps that have a
// successor (the first step is the prompt's prefill). Messages outside the
// steps (rank 0 sending each step's plan) are spread evenly over the steps.
json breakdown(const engine::Scenario& s, const engine::RunResult& r) {
  json nodes = json::array();
  for (std::size_t n = 0; n < r.nodes.size(); ++n) {
    const auto& node = r.nodes[n];
    const auto& steps = node.steps;
    if (steps.size() < 3) continue;
    double outside_comm = node.traffic.comm_s - node.traffic.wait_s;
    for (const auto& st : steps) outside_comm -= st.comm_s - st.wait_s;
    double token = 0, compute = 0, comm = 0;
    const std::size_t count = steps.size() - 2;
    for (std::size_t k = 1; k + 1 < steps.size(); ++k) {
      token += steps[k + 1].start_s - steps[k].start_s;
      compute += steps[k].compute_s;
      comm += steps[k].comm_s - steps[k].wait_s + outside_comm / steps.size();
    }
    nodes.push_back({{"node", s.nodes[n].name},
                     {"hardware", s.nodes[n].hardware},
                     {"token_s", token / count},
                     {"compute_s", compute / count},
                     {"comm_s", comm / count},
                     {"wait_s", std::max(0.0, token - compute - comm) / count}});  // not below 0 by rounding
  }
  return nodes;
}

// The child's side of run_row: plan, simulate, summarise as JSON.
std::string simulate_in_child(const engine::CalibrationRow& row, const engine::Scenario& s,
                              const engine::Catalog& catalog, const engine::StackCard& profile) {
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
              {"strategy", plan.strategy},
              {"nodes", row.prefill ? json::array() : breakdown(s, result)}}
      .dump();
}

}  // namespace

RowRun run_row(const engine::CalibrationRow& row, const std::vector<std::string>& cluster,
               const engine::Catalog& catalog, const engine::StackCard& profile, const std::string& link) {
  const engine::Scenario s = engine::row_scenario(row, cluster, link);
  const IsolatedResult child = run_isolated([&] { return simulate_in_child(row, s, catalog, profile); });
  if (!child.ok) throw std::runtime_error(fmt::format("{}: simulation failed: {}", row.label(), child.output));
  const json j = json::parse(child.output);
  RowRun run;
  if (j.contains("refusal")) {
    run.refusal = j["refusal"];
    return run;
  }
  run.tokens_per_s = j["tokens_per_s"];
  run.strategy = j["strategy"];
  for (const auto& n : j["nodes"])
    run.nodes.push_back({n["node"], n["hardware"], n["token_s"], n["compute_s"], n["comm_s"], n["wait_s"]});
  return run;
}

std::vector<double> simulate_rows(const std::vector<engine::CalibrationRow>& rows,
                                  const std::vector<std::string>& cluster, const engine::Catalog& catalog,
                                  const engine::StackCard& profile) {
  std::vector<double> out;
  for (const auto& row : rows) {
    const RowRun run = run_row(row, cluster, catalog, profile);
    if (!run.refusal.empty()) throw std::runtime_error(row.label() + ": " + run.refusal);
    out.push_back(run.tokens_per_s);
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
  engine::StackCard profile;
  int evaluations = 0;

  void apply(const std::vector<double>& x) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto& p = parameters[i];
      profile.set(p.key, p.lower + x[i] * (p.upper - p.lower));
    }
  }

  double operator()(const std::vector<double>& x) {
    apply(x);
    ++evaluations;
    return engine::squared_error(simulate_rows(rows, cluster, catalog, profile), rows);
  }
};

}  // namespace

FitResult fit_profile(const std::vector<engine::CalibrationRow>& rows, const std::vector<std::string>& cluster,
                      const engine::Catalog& catalog, const engine::StackCard& start,
                      const std::vector<engine::FitParameter>& parameters, int max_evaluations) {
  Objective objective{rows, cluster, catalog, parameters, start};
  std::vector<double> x;
  for (const auto& p : parameters)
    x.push_back(std::clamp((start.get(p.key) - p.lower) / (p.upper - p.lower), 0.0, 1.0));
  if (!x.empty()) {
    nlopt::opt opt(nlopt::LN_BOBYQA, static_cast<unsigned>(x.size()));
    opt.set_lower_bounds(0.0);
    opt.set_upper_bounds(1.0);
    opt.set_initial_step(0.1);
    opt.set_xtol_abs(1e-4);
    opt.set_ftol_abs(1e-7);
    opt.set_maxeval(max_evaluations);
    opt.set_min_objective([](const std::vector<double>& v, std::vector<double>&,
                             void* data) { return (*static_cast<Objective*>(data))(v); },
                          &objective);
    double best = 0;
    try {
      opt.optimize(x, best);
    } catch (const nlopt::roundoff_limited&) {
      // x holds the best point found: good enough to report.
    }
    objective.apply(x);
  }
  FitResult fit{objective.profile, simulate_rows(rows, cluster, catalog, objective.profile), 0, objective.evaluations};
  fit.squared_error = engine::squared_error(fit.simulated, rows);
  return fit;
}

}  // namespace sim
