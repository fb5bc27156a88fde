// meshinfer calibrate: fit the software-stack profiles and the hardware profile
// they share to published measurements, all at once; print published vs
// simulated for every row, optionally cross-validate and write the report.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "cli/commands.hpp"
#include "cli/progress_line.hpp"
#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"
#include "engine/input/bench_import.hpp"
#include "engine/input/measurements.hpp"
#include "sim/studies/calibration_fit.hpp"
#include "sim/studies/calibration_report.hpp"
#include "sim/studies/cross_validation.hpp"

namespace cli {

namespace {

struct CalibrateOptions {
  std::string measurements;
  std::string out;  // directory for the fitted profile files; empty: the catalog's
  std::string report;
  bool no_fit = false;
  bool cross_validate = false;
  int max_evaluations = 200;
  int jobs = 0;
  std::vector<std::string> imports;  // benchmark outputs (llama-bench -o json, mlx_lm.benchmark)
  engine::BenchImport import_setup;
};

// The imported rows join the measurements; printed as rows to keep in the file.
void add_imports(const CalibrateOptions& o, engine::Measurements& m) {
  const auto& catalog = engine::Catalog::builtin();
  const engine::BenchImport& setup = o.import_setup;
  if (!catalog.has_model(setup.model))
    throw engine::InputError("--model", setup.model, engine::unknown_name("model", setup.model, catalog.model_names()));
  if (!catalog.has_hardware(setup.hardware))
    throw engine::InputError("--hardware", setup.hardware,
                             engine::unknown_name("hardware card", setup.hardware, catalog.hardware_names()));
  nlohmann::json rows = {{"decode", nlohmann::json::array()}, {"prefill", nlohmann::json::array()}};
  for (const auto& file : o.imports)
    for (auto& r : engine::import_benchmark(file, setup)) {
      try {
        catalog.model(r.model).quant(r.quant);
      } catch (const std::out_of_range& e) {
        throw engine::InputError(file, "", std::string(e.what()) + ": pass --quant");
      }
      rows[r.prefill ? "prefill" : "decode"].push_back(engine::measurement_json(r));
      m.rows.push_back(std::move(r));
    }
  fmt::print("imported rows (add them to the measurements file to keep them):\n{}\n", rows.dump(1));
}

void print_rows(const std::vector<engine::CalibrationRow>& rows, const std::vector<double>& simulated) {
  double sum = 0;
  const std::vector<double> errors = engine::row_errors(simulated, rows);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double e = errors[i];
    sum += std::abs(e);
    fmt::print("  {:<66} published {:>8.2f}  simulated {:>8.2f}  error {:>+6.1f}%\n", rows[i].label(),
               rows[i].published, simulated[i], 100 * e);
  }
  fmt::print("  mean absolute error {:.1f}% over {} rows\n", 100 * sum / rows.size(), rows.size());
}

// Fits every stack's profile and the hardware profile they share, all at once, and
// writes the files; with --no-fit only simulates the rows.
void fit_stacks(const CalibrateOptions& o, const engine::Measurements& m, const sim::Profiles& profiles,
                const std::vector<engine::FitParameter>& parameters, int jobs) {
  const auto& catalog = engine::Catalog::builtin();
  if (o.no_fit) {
    fmt::print("published vs simulated\n");
    return print_rows(m.rows, sim::simulate_rows(m.rows, m.cluster, catalog, profiles, jobs));
  }
  const auto fit = sim::fit_profiles(m.rows, m.cluster, catalog, profiles, parameters, o.max_evaluations, jobs);
  fmt::print("fitted {} parameter(s) in {} evaluations (sum of squared relative errors {:.3g})\n", parameters.size(),
             fit.evaluations, fit.squared_error);
  std::set<std::string> written;
  for (const auto& p : parameters) {
    const engine::StackProfile& fitted = fit.profiles.at(p.stacks.at(0));
    fmt::print("  {:<18} {:<28} {:>10.4f}  (bounds {} .. {})\n", p.profile, p.key, fitted.get(p.key), p.lower, p.upper);
    if (!written.insert(p.profile).second) continue;
    const std::string file = catalog.dir() + "/profiles/" + p.profile + ".json";
    const std::string out = o.out.empty() ? file : o.out + "/" + p.profile + ".json";
    engine::write_profile(file, out, fitted);
    fmt::print("  wrote {}\n", out);
  }
  print_rows(m.rows, fit.simulated);
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
  const StudyProgress progress("calibrate");
  auto m = engine::load_measurements(o.measurements);
  if (!o.imports.empty()) add_imports(o, m);
  const auto& catalog = engine::Catalog::builtin();
  const int jobs = o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  std::vector<std::string> stacks;
  for (const auto& r : m.rows)
    if (std::find(stacks.begin(), stacks.end(), r.stack) == stacks.end()) stacks.push_back(r.stack);
  sim::Profiles profiles;
  for (const auto& stack : stacks) profiles.emplace(stack, engine::StackProfile::load(catalog.dir(), stack));
  const auto parameters = engine::stack_fit_parameters(catalog.dir(), stacks);
  fit_stacks(o, m, profiles, parameters, jobs);
  sim::CrossValidation cv;
  if (o.cross_validate || !o.report.empty()) {
    for (auto& [stack, p] : profiles) p = engine::StackProfile::load(catalog.dir(), stack);  // as fitted
    cv = sim::by_stack(sim::cross_validate(m.rows, m.cluster, catalog, profiles, parameters, o.max_evaluations, jobs));
    for (const auto& [stack, rows] : cv) print_cross_validation(stack, rows);
  }
  if (!o.report.empty()) {
    sim::write_calibration_report(m, o.measurements, catalog, cv, jobs, o.report);
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
  cmd->add_option("--out", o->out, "write the fitted profile files into this directory (default: the catalog's)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--report", o->report, "also write the calibration report (markdown) here");
  cmd->add_flag("--no-fit", o->no_fit, "only simulate the rows with the profiles as they are");
  auto* import = cmd->add_option("--import", o->imports,
                                 "rows from your own runs: the output of `llama-bench -o json` or `mlx_lm.benchmark` "
                                 "(repeatable); they join the measurements")
                     ->check(CLI::ExistingFile);
  cmd->add_option("--model", o->import_setup.model, "--import: the catalog model that ran")->needs(import);
  cmd->add_option("--quant", o->import_setup.quant,
                  "--import: its catalog quantization (llama-bench: default from its model_type)")
      ->needs(import);
  cmd->add_option("--hardware", o->import_setup.hardware, "--import: the hardware card of the machine it ran on")
      ->needs(import);
  import->needs("--model")->needs("--hardware");
  cmd->add_flag("--cross-validate", o->cross_validate,
                "leave one model out at a time: fit the other models' rows, predict its rows (--report does this too)");
  cmd->add_option("--max-evaluations", o->max_evaluations, "objective evaluations per fit")->check(CLI::PositiveNumber);
  cmd->add_option("--jobs", o->jobs, "worker processes (default: all cores); results do not depend on it");
  cmd->callback([o, &status] { status = calibrate(*o); });
}

}  // namespace cli
