// Leave-one-model-out cross-validation of the stacks' profiles: how well the fit
// predicts a model it has not seen. One row at a time would leak through the
// model's other rows, so every row of the held-out model leaves together.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/cards/stack_profile.hpp"
#include "engine/input/measurements.hpp"
#include "sim/studies/calibration_fit.hpp"

namespace sim {

struct CrossValidatedRow {
  engine::CalibrationRow row;
  double in_sample = 0;  // tok/s with the profile as given (fitted to every row)
  double held_out = 0;   // tok/s with the profile fitted to the other models' rows only
  // What in_sample and held_out are divided by before they are compared (engine::shape_factors): 1 but for
  // the rows of a shape_only group. apply_shape_factors sets them.
  double in_sample_factor = 1, held_out_factor = 1;

  double in_sample_error() const { return engine::relative_error(in_sample / in_sample_factor, row.published); }
  double held_out_error() const { return engine::relative_error(held_out / held_out_factor, row.published); }
  // The same for the time the row's tokens take (a prefill row's: its TTFT).
  double held_out_time_error() const { return row.published / (held_out / held_out_factor) - 1; }
};

// Sets every row's in_sample_factor and held_out_factor from the rows' figures (cross_validate does).
void apply_shape_factors(std::vector<CrossValidatedRow>& rows);

// For every model of `rows` (any stacks): fits `parameters` to the other models'
// rows, starting from the middle of their bounds (not from `profiles`, whose values
// were fitted with the held-out rows), and predicts the model's rows. A model
// leaves every stack at once: the stacks share the hardware's parameters.
// REQUIRES: rows name at least two models. Throws std::runtime_error otherwise.
std::vector<CrossValidatedRow> cross_validate(const std::vector<engine::CalibrationRow>& rows,
                                              const std::vector<std::string>& cluster, const engine::Catalog& catalog,
                                              const Profiles& profiles,
                                              const std::vector<engine::FitParameter>& parameters, int max_evaluations,
                                              int jobs);

// Per stack.
using CrossValidation = std::map<std::string, std::vector<CrossValidatedRow>>;
CrossValidation by_stack(const std::vector<CrossValidatedRow>& rows);

struct ErrorSummary {
  double mean_abs = 0;  // mean of |relative error|
  double worst = 0;     // largest |relative error|
  std::string worst_row;
};
ErrorSummary held_out_summary(const std::vector<CrossValidatedRow>& rows);
ErrorSummary in_sample_summary(const std::vector<CrossValidatedRow>& rows);
ErrorSummary held_out_time_summary(const std::vector<CrossValidatedRow>& rows);

}  // namespace sim
