// meshinfer run: simulate a scenario, write its reports, check its expectations.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/load_for_run.hpp"
#include "cli/progress_line.hpp"
#include "engine/input/scenario_file.hpp"
#include "engine/input/workload.hpp"
#include "sim/scenario_run.hpp"
#include "sim/studies/scaling.hpp"

namespace cli {

namespace {

// The requests done and the simulated time, as a progress line.
engine::ProgressFn progress_line(bool quiet) {
  if (quiet) return {};
  const auto line = std::make_shared<ProgressLine>("run");
  return [line](int done, int total, double simulated_s) {
    if (done == total) return line->finish();  // the summary follows
    line->show(fmt::format("requests {}/{}, simulated {:.2f} s", done, total, simulated_s));
  };
}

struct RunOptions {
  std::string scenario;
  std::optional<unsigned long long> seed;
  std::string out, junit;
  bool quiet = false;
  bool no_scaling = false;
  std::vector<std::string> cards;
  std::optional<engine::SimulationLevel> level;
  WorkloadFlags workload;
};

int run(const RunOptions& o) {
  session::RunSession l = load_for_run(o.scenario, o.cards, o.seed, true, o.level, o.workload);
  // Before the run: each node count simulates in a child, and a child forked after a simulation inherits it.
  if (!o.no_scaling)
    l.scaling = sim::scaling_view(l.scenario, l.plan.strategy, l.catalog,
                                  static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))));
  const auto result =
      sim::simulate(l.scenario, l.catalog, l.plan, l.profile,
                    engine::make_requests(l.scenario.workload, l.scenario.seed), progress_line(o.quiet));
  return session::report_run(l, result, o.out, "", o.junit);
}

}  // namespace

void add_run_command(CLI::App& app, int& status) {
  auto options = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "simulate a scenario and write report.json, report.md and trace.json");
  cmd->add_option("scenario", options->scenario, "scenario file")->required();
  cmd->add_option("--seed", options->seed, "override the scenario's seed");
  cmd->add_option("--out", options->out, "report directory (default reports/out/<scenario name>)");
  cmd->add_option("--junit", options->junit, "also write the expectations and invariants as JUnit XML here");
  cmd->add_flag("--quiet", options->quiet, "no progress line");
  cmd->add_flag("--no-scaling", options->no_scaling,
                "leave out the scaling view (the model on 1, 2, 4 ... of the nodes, each simulated briefly)");
  add_level_option(cmd, options->level);
  options->workload.add_to(cmd);
  cmd->add_option("--card", options->cards,
                  "extra hardware or link card file, e.g. from `meshinfer probe` (repeatable)");
  cmd->callback([options, &status] { status = run(*options); });
}

void add_validate_command(CLI::App& app, int& status) {
  auto path = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("validate", "check a scenario and print its plan, without running it");
  cmd->add_option("scenario", *path, "scenario file")->required();
  cmd->callback([path, &status] {
    const auto s = engine::load_scenario(*path, engine::Catalog::builtin());
    const engine::Catalog catalog = engine::catalog_for(s, engine::Catalog::builtin());
    const auto profile = engine::StackProfile::load(catalog.dir(), s.profile);
    fmt::print("{}: valid\n{}", *path, sim::choose_plan(s, catalog, profile).plan.describe());
    status = 0;
  });
}

}  // namespace cli
