// meshinfer calibrate: fit software-stack profiles to published measurements,
// print published vs simulated for every row, optionally write the report.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <set>

#include "cli/commands.hpp"
#include "engine/error.hpp"
#include "engine/measurements.hpp"
#include "sim/studies/calibration_fit.hpp"
#include "sim/studies/calibration_report.hpp"

namespace cli {

namespace {

struct CalibrateOptions {
  std::string measurements;
  std::string profile;  // empty: every stack the measurements name
  std::string out;
  std::string report;
  bool no_fit = false;
  int max_evaluations = 200;
};

std::vector<engine::CalibrationRow> rows_of(const engine::Measurements& m, const std::string& stack) {
  std::vector<engine::CalibrationRow> out;
  for (const auto& r : m.rows)
    if (r.stack == stack) out.push_back(r);
  return out;
}

void print_rows(const std::vector<engine::CalibrationRow>& rows, const std::vector<double>& simulated) {
  double sum = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double e = engine::relative_error(simulated[i], rows[i].published);
    sum += std::abs(e);
    fmt::print("  {:<58} published {:>8.2f}  simulated {:>8.2f}  error {:>+6.1f}%\n", rows[i].label(),
               rows[i].published, simulated[i], 100 * e);
  }
  fmt::print("  mean absolute error {:.1f}% over {} rows\n", 100 * sum / rows.size(), rows.size());
}

// Fits (or, with --no-fit, only checks) one stack's profile.
void calibrate_stack(const CalibrateOptions& o, const engine::Measurements& m, const std::string& stack) {
  const auto& catalog = engine::Catalog::builtin();
  const std::string file = catalog.dir() + "/profiles/" + stack + ".json";
  const auto rows = rows_of(m, stack);
  if (rows.empty()) throw engine::InputError(o.measurements, "", "no row names the stack " + stack);
  auto profile = engine::StackCard::load(catalog.dir(), stack);
  if (!o.no_fit) {
    const auto parameters = engine::fit_parameters(file);
    const auto fit = sim::fit_profile(rows, m.cluster, catalog, profile, parameters, o.max_evaluations);
    const std::string out = o.out.empty() ? file : o.out;
    engine::write_profile(file, out, fit.profile);
    fmt::print("{}: fitted {} parameter(s) in {} evaluations (sum of squared relative errors {:.3g}), wrote {}\n",
               stack, parameters.size(), fit.evaluations, fit.squared_error, out);
    for (const auto& p : parameters)
      fmt::print("  {:<30} {:>10.4f}  (bounds {} .. {})\n", p.key, fit.profile.get(p.key), p.lower, p.upper);
    return print_rows(rows, fit.simulated);
  }
  fmt::print("{}: published vs simulated\n", stack);
  print_rows(rows, sim::simulate_rows(rows, m.cluster, catalog, profile));
}

int calibrate(const CalibrateOptions& o) {
  const auto m = engine::load_measurements(o.measurements);
  std::set<std::string> stacks;
  for (const auto& r : m.rows) stacks.insert(r.stack);
  if (!o.profile.empty()) {
    if (!stacks.count(o.profile)) throw engine::InputError(o.measurements, "", "no row names the stack " + o.profile);
    stacks = {o.profile};
  }
  if (!o.out.empty() && stacks.size() != 1)
    throw engine::InputError(o.out, "", "--out needs --profile: one file per stack");
  for (const auto& stack : stacks) calibrate_stack(o, m, stack);
  if (!o.report.empty()) {
    sim::write_calibration_report(m, o.measurements, engine::Catalog::builtin(), o.report);
    fmt::print("wrote {}\n", o.report);
  }
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, int& status) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* cmd = app.add_subcommand("calibrate", "fit software-stack profiles to published measurements (published.json)");
  cmd->add_option("measurements", o->measurements, "measurements file, e.g. scenarios/calibration/published.json")
      ->required();
  cmd->add_option("--profile", o->profile, "fit only this stack's profile (default: every stack the file names)");
  cmd->add_option("--out", o->out, "write the fitted profile here (default: the catalog's profile file)");
  cmd->add_option("--report", o->report, "also write the calibration report (markdown) here");
  cmd->add_flag("--no-fit", o->no_fit, "only simulate the rows with the profiles as they are");
  cmd->add_option("--max-evaluations", o->max_evaluations, "objective evaluations per fit")->check(CLI::PositiveNumber);
  cmd->callback([o, &status] { status = calibrate(*o); });
}

}  // namespace cli
