// The meshinfer command line: one subcommand per job.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <unistd.h>

#include <cstdio>

#include "engine/error.hpp"
#include "engine/planner.hpp"
#include "engine/profile.hpp"
#include "engine/report.hpp"
#include "engine/scenario.hpp"
#include "engine/workload.hpp"
#include "sim/scenario_run.hpp"

namespace {

constexpr int kExitBreach = 1;
constexpr int kExitBadInput = 2;

std::string features() {
#ifdef MESHINFER_HAVE_VERBS
  return "transports: tcp, verbs";
#else
  return "transports: tcp (verbs transport not built: rdma-core headers were missing)";
#endif
}

// A progress line on stderr: rewritten in place on a terminal, a new line
// every few seconds in a log.
engine::ProgressFn progress_line(bool quiet) {
  if (quiet) return {};
  const bool tty = ::isatty(STDERR_FILENO);
  const auto every = tty ? std::chrono::milliseconds(250) : std::chrono::milliseconds(5000);
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [=](int done, int total, double simulated_s) {
    const auto now = std::chrono::steady_clock::now();
    if (done != total && now - *last < every) return;
    *last = now;
    fmt::print(stderr, "{}  requests {}/{}  simulated {:.2f} s{}", tty ? "\r" : "", done, total, simulated_s,
               tty && done != total ? "" : "\n");
  };
}

struct RunOptions {
  std::string scenario;
  std::optional<unsigned long long> seed;
  std::string out;
  bool quiet = false;
};

int run(const RunOptions& o) {
  const auto& catalog = engine::Catalog::builtin();
  engine::Scenario s = engine::load_scenario(o.scenario, catalog);
  if (o.seed) s.seed = *o.seed;
  const auto profile = engine::BackendProfile::load(catalog.dir(), s.profile);
  const sim::PlanChoice choice = sim::choose_plan(s, catalog, profile);
  for (const auto& c : choice.candidates)
    fmt::print("  auto: {:<14} {}\n", c.strategy, c.refusal.empty() ? fmt::format("probe {:.3f} s", c.probe_s) : c.refusal);
  fmt::print("{}", choice.plan.describe());

  const auto result = sim::simulate(s, catalog, choice.plan, profile, engine::make_requests(s.workload, s.seed),
                                    progress_line(o.quiet));
  auto report = engine::build_report(s, catalog, choice.plan, profile.name, result, s.seed);
  const auto checks = engine::check_expectations(s, report);
  const std::string dir = o.out.empty() ? "reports/out/" + s.name : o.out;
  engine::write_reports(dir, report, engine::render_trace(s, choice.plan, result));

  const auto& sum = report["summary"];
  fmt::print("{}: decode {:.2f} tok/s, prefill {:.1f} tok/s, TTFT p50 {:.3f} s p99 {:.3f} s, ITL p50 {:.2f} ms, "
             "requests {} completed / {} failed, simulated {:.2f} s\n",
             s.name, sum["decode_tokens_per_s"].get<double>(), sum["prefill_tokens_per_s"].get<double>(),
             sum["ttft_s"]["p50"].get<double>(), sum["ttft_s"]["p99"].get<double>(),
             1e3 * sum["itl_s"]["p50"].get<double>(), sum["requests"]["completed"].get<int>(),
             sum["requests"]["failed"].get<int>(), sum["simulated_s"].get<double>());
  fmt::print("reports: {0}/report.json {0}/report.md {0}/trace.json\n", dir);
  int status = 0;
  for (const auto& c : checks) {
    if (c.pass) continue;
    fmt::print(stderr, "{}\n", engine::describe_breach(c));
    status = kExitBreach;
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"meshinfer: LLM inference on a simulated or real mesh of machines"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("meshinfer 0.1.0 ({}), {}", MESHINFER_GIT, features()));

  RunOptions run_options;
  auto* run_cmd = app.add_subcommand("run", "simulate a scenario and write report.json, report.md and trace.json");
  run_cmd->add_option("scenario", run_options.scenario, "scenario file")->required();
  run_cmd->add_option("--seed", run_options.seed, "override the scenario's seed");
  run_cmd->add_option("--out", run_options.out, "report directory (default reports/out/<scenario name>)");
  run_cmd->add_flag("--quiet", run_options.quiet, "no progress line");

  std::string validate_path;
  auto* validate_cmd = app.add_subcommand("validate", "check a scenario and print its plan, without running it");
  validate_cmd->add_option("scenario", validate_path, "scenario file")->required();

  CLI11_PARSE(app, argc, argv);
  try {
    if (*run_cmd) return run(run_options);
    if (*validate_cmd) {
      const auto& catalog = engine::Catalog::builtin();
      const auto s = engine::load_scenario(validate_path, catalog);
      const auto profile = engine::BackendProfile::load(catalog.dir(), s.profile);
      fmt::print("{}: valid\n{}", validate_path, sim::choose_plan(s, catalog, profile).plan.describe());
    }
  } catch (const engine::InputError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitBadInput;
  } catch (const engine::PlanError& e) {
    fmt::print(stderr, "error: cannot place the model: {}\n", e.what());
    return kExitBadInput;
  }
  return 0;
}
