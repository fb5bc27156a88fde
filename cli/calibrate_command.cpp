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
#include "sim/studies/cross_validation.hpp"

namespace cli {

namespace {

struct CalibrateOptions {
  std::string measurements;
  std::string profile;  // empty: every stack the measurements name
  std::string out;
  std::string report;
  bool no_fit = false;
  bool cross_validate = false;
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

void print_cross_validation(const std::string& stack, const std::vector<sim::CrossValidatedRow>& rows) {
  fmt::print("{}: leave one model out (fit on the other models' rows, predict this model's)\n", stack);
  for (const auto& r : rows)
    fmt::print("  {:<66} published {:>8.2f}  in-sample {:>+6.1f}%  held out {:>8.2f} {:>+6.1f}%\n", r.row.label(),
               r.row.published, 100 * r.in_sample_error(), r.held_out, 100 * r.held_out_error());
  const auto in = sim::in_sample_summary(rows), out = sim::held_out_summary(rows);
  fmt::print("  mean absolute error: in-sample {:.1f}%, held out {:.1f}%; worst held out {:.1f}% ({})\n",
             100 * in.mean_abs, 100 * out.mean_abs, 100 * out.worst, out.worst_row);
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
  sim::CrossValidation cv;
  if (o.cross_validate || !o.report.empty()) {
    const auto& catalog = engine::Catalog::builtin();
    for (const auto& stack : stacks) {
      const auto parameters = engine::fit_parameters(catalog.dir() + "/profiles/" + stack + ".json");
      const auto profile = engine::StackCard::load(catalog.dir(), stack);
      cv[stack] = sim::cross_validate(rows_of(m, stack), m.cluster, catalog, profile, parameters, o.max_evaluations);
      print_cross_validation(stack, cv[stack]);
    }
  }
  if (!o.report.empty()) {
    sim::write_calibration_report(m, o.measurements, engine::Catalog::builtin(), cv, o.report);
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
  cmd->add_flag("--cross-validate", o->cross_validate,
                "leave one model out at a time: fit the other models' rows, predict its rows (--report does this too)");
  cmd->add_option("--max-evaluations", o->max_evaluations, "objective evaluations per fit")->check(CLI::PositiveNumber);
  cmd->callback([o, &status] { status = calibrate(*o); });
}

}  // namespace cli
