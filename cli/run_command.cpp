// meshinfer run: simulate a scenario, write its reports, check its expectations.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "engine/profile.hpp"
#include "engine/report.hpp"
#include "engine/scenario.hpp"
#include "engine/workload.hpp"
#include "sim/scenario_run.hpp"

namespace cli {

namespace {

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
  fmt::print("reports: {0}/report.json {0}/report.md {0}/report.html {0}/trace.json\n", dir);
  int status = 0;
  for (const auto& c : checks) {
    if (c.pass) continue;
    fmt::print(stderr, "{}\n", engine::describe_breach(c));
    status = kExitBreach;
  }
  for (const auto& violation : report["invariants"]) {
    fmt::print(stderr, "invariant violated: {}\n", violation.get<std::string>());
    status = kExitBreach;
  }
  const auto& faults = report["faults"];
  if (faults["injected"].get<int>() > 0) {
    auto seconds = [](const auto& v) { return v.is_null() ? std::string("never") : fmt::format("{:.3f} s", v.template get<double>()); };
    fmt::print("faults: {} injected, detected after {}, recovered after {}, downtime {}, {} tokens recomputed\n",
               faults["injected"].get<int>(), seconds(faults["time_to_detect_s"]), seconds(faults["time_to_recover_s"]),
               seconds(faults["downtime_s"]), faults["tokens_recomputed"].get<long>());
  }
  return status;
}

}  // namespace

void add_run_command(CLI::App& app, int& status) {
  auto options = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "simulate a scenario and write report.json, report.md and trace.json");
  cmd->add_option("scenario", options->scenario, "scenario file")->required();
  cmd->add_option("--seed", options->seed, "override the scenario's seed");
  cmd->add_option("--out", options->out, "report directory (default reports/out/<scenario name>)");
  cmd->add_flag("--quiet", options->quiet, "no progress line");
  cmd->callback([options, &status] { status = run(*options); });
}

void add_validate_command(CLI::App& app, int& status) {
  auto path = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("validate", "check a scenario and print its plan, without running it");
  cmd->add_option("scenario", *path, "scenario file")->required();
  cmd->callback([path, &status] {
    const auto& catalog = engine::Catalog::builtin();
    const auto s = engine::load_scenario(*path, catalog);
    const auto profile = engine::BackendProfile::load(catalog.dir(), s.profile);
    fmt::print("{}: valid\n{}", *path, sim::choose_plan(s, catalog, profile).plan.describe());
    status = 0;
  });
}

}  // namespace cli
