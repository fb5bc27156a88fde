#include "sim/studies/cross_validation.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sim {

namespace {

std::vector<std::string> models_in_order(const std::vector<engine::CalibrationRow>& rows) {
  std::vector<std::string> models;
  for (const auto& r : rows)
    if (std::find(models.begin(), models.end(), r.model) == models.end()) models.push_back(r.model);
  return models;
}

ErrorSummary summary(const std::vector<CrossValidatedRow>& rows, double (CrossValidatedRow::*error)() const) {
  ErrorSummary s;
  for (const auto& r : rows) {
    const double e = std::abs((r.*error)());
    s.mean_abs += e / rows.size();
    if (e >= s.worst) {
      s.worst = e;
      s.worst_row = r.row.label();
    }
  }
  return s;
}

}  // namespace

std::vector<CrossValidatedRow> cross_validate(const std::vector<engine::CalibrationRow>& rows,
                                              const std::vector<std::string>& cluster, const engine::Catalog& catalog,
                                              const Profiles& profiles,
                                              const std::vector<engine::FitParameter>& parameters, int max_evaluations,
                                              int jobs) {
  const auto models = models_in_order(rows);
  if (models.size() < 2) throw std::runtime_error("cross-validation needs rows of at least two models");
  const std::vector<double> in_sample = simulate_rows(rows, cluster, catalog, profiles, jobs);
  Profiles neutral = profiles;
  for (const auto& p : parameters)
    for (const auto& stack : p.stacks)
      if (auto at = neutral.find(stack); at != neutral.end()) at->second.set(p.key, (p.lower + p.upper) / 2);
  std::vector<CrossValidatedRow> out;
  for (std::size_t i = 0; i < rows.size(); ++i) out.push_back({rows[i], in_sample[i], 0});
  for (const auto& model : models) {
    std::vector<engine::CalibrationRow> train, test;
    for (const auto& r : rows) (r.model == model ? test : train).push_back(r);
    const FitResult fit = fit_profiles(train, cluster, catalog, neutral, parameters, max_evaluations, jobs);
    const std::vector<double> predicted = simulate_rows(test, cluster, catalog, fit.profiles, jobs);
    std::size_t k = 0;
    for (auto& r : out)
      if (r.row.model == model) r.held_out = predicted[k++];
  }
  apply_shape_factors(out);
  return out;
}

void apply_shape_factors(std::vector<CrossValidatedRow>& rows) {
  std::vector<engine::CalibrationRow> measured;
  std::vector<double> in_sample, held_out;
  for (const auto& r : rows) {
    measured.push_back(r.row);
    in_sample.push_back(r.in_sample);
    held_out.push_back(r.held_out);
  }
  const auto in_factors = engine::shape_factors(in_sample, measured);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].in_sample_factor = in_factors[i];
  if (std::all_of(held_out.begin(), held_out.end(), [](double v) { return v > 0; })) {
    const auto held_factors = engine::shape_factors(held_out, measured);
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i].held_out_factor = held_factors[i];
  }
}

CrossValidation by_stack(const std::vector<CrossValidatedRow>& rows) {
  CrossValidation out;
  for (const auto& r : rows) out[r.row.stack].push_back(r);
  return out;
}

ErrorSummary held_out_summary(const std::vector<CrossValidatedRow>& rows) {
  return summary(rows, &CrossValidatedRow::held_out_error);
}

ErrorSummary in_sample_summary(const std::vector<CrossValidatedRow>& rows) {
  return summary(rows, &CrossValidatedRow::in_sample_error);
}

ErrorSummary held_out_time_summary(const std::vector<CrossValidatedRow>& rows) {
  return summary(rows, &CrossValidatedRow::held_out_time_error);
}

}  // namespace sim
