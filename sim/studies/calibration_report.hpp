// reports/calibration.md: every published row against the simulation, the
// fitted parameters, and predictions for rows nobody measured.
#pragma once

#include <string>

#include "engine/cards/catalog.hpp"
#include "engine/input/measurements.hpp"
#include "sim/studies/cross_validation.hpp"

namespace sim {

// Simulates with the catalog's committed profiles and writes the report to `out`,
// with `cv` (every stack of `m`) beside the in-sample figures and as the planning
// table's uncertainty; simulates on `jobs` worker processes.
void write_calibration_report(const engine::Measurements& m, const std::string& measurements_file,
                              const engine::Catalog& catalog, const CrossValidation& cv, int jobs,
                              const std::string& out);

}  // namespace sim
