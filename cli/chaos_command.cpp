// meshinfer chaos: the scenario under a random fault schedule per seed.
#include <fmt/format.h>
#include <unistd.h>

#include <memory>

#include "cli/commands.hpp"
#include "session/output_file.hpp"
#include "cli/progress_line.hpp"
#include "cli/study_shard.hpp"
#include "cli/workload_flags.hpp"
#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"
#include "engine/input/scenario.hpp"
#include "engine/input/scenario_file.hpp"
#include "sim/fault_injector.hpp"
#include "sim/studies/chaos.hpp"
#include "sim/studies/chaos_junit.hpp"

namespace cli {

namespace {

struct ChaosOptions {
  std::string scenario, seeds = "1..100", out, junit;
  std::vector<std::string> kinds;
  int jobs = 0;
  WorkloadFlags workload;  // a campaign runs the scenario hundreds of times: it may be shortened
  std::optional<engine::SimulationLevel> level;
  StudyShare share;
};

void parse_seeds(const std::string& text, sim::ChaosQuery& q) {
  const auto dots = text.find("..");
  try {
    if (dots == std::string::npos) throw std::invalid_argument(text);
    q.first_seed = std::stoull(text.substr(0, dots));
    q.last_seed = std::stoull(text.substr(dots + 2));
  } catch (const std::exception&) {
    throw engine::InputError("--seeds", text, "expected A..B, for example 1..300");
  }
  if (q.last_seed < q.first_seed) throw engine::InputError("--seeds", text, "the last seed comes before the first");
}

int chaos(ChaosOptions& o) {
  engine::Scenario s = engine::load_scenario(o.scenario, engine::Catalog::builtin());
  const engine::Catalog catalog = engine::catalog_for(s, engine::Catalog::builtin());
  if (o.level) s.level = *o.level;
  o.workload.apply(s.workload);
  sim::ChaosQuery q;
  parse_seeds(o.seeds, q);
  for (const auto& k : o.kinds) {
    const auto kind = engine::parse_name<engine::FaultKind>(k);
    if (!kind)
      throw engine::InputError("--faults", k, engine::unknown_name("fault kind", k, engine::Names<engine::FaultKind>::value));
    if (!sim::simulated(*kind)) throw engine::InputError("--faults", k, "not simulated, so chaos cannot draw it");
    q.kinds.push_back(*kind);
  }
  if (q.kinds.empty())
    for (engine::FaultKind k : engine::all_of<engine::FaultKind>())
      if (sim::simulated(k)) q.kinds.push_back(k);
  q.workers = o.share.workers(o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))));
  if (o.share.sharded() && o.out.empty())
    throw engine::InputError("--out", "", "a shard needs --out for its shard file");
  const auto campaign = [&] {
    const StudyProgress progress("chaos");
    return sim::run_chaos(s, catalog, q);
  }();
  if (o.share.sharded()) {
    o.share.write(o.share.file_in(o.out));
    return 0;
  }
  fmt::print("{}", sim::render_chaos_table(campaign));
  if (!o.out.empty()) session::write_text_file(o.out + "/campaign.json", campaign.dump(2) + "\n");
  if (!o.junit.empty()) session::write_text_file(o.junit, sim::render_chaos_junit(campaign));
  return campaign["violations"].empty() && campaign["oracle_violations"].empty() ? 0 : kExitBreach;
}

}  // namespace

void add_chaos_command(CLI::App& app, int& status) {
  auto o = std::make_shared<ChaosOptions>();
  auto* cmd =
      app.add_subcommand("chaos", "run a scenario under a random fault schedule per seed and check the invariants");
  cmd->add_option("scenario", o->scenario, "scenario file")->required();
  cmd->add_option("--seeds", o->seeds, "seed range A..B; each seed's faults replay exactly");
  cmd->add_option("--faults", o->kinds, "fault kinds to draw from (default: all)")->delimiter(',');
  o->workload.add_to(cmd);
  cmd->add_option("--jobs", o->jobs, "worker processes (default: all cores)");
  cmd->add_option("--out", o->out, "directory for campaign.json (a shard: for its shard file)");
  cmd->add_option("--junit", o->junit, "write each seed's invariants as JUnit XML here");
  add_level_option(cmd, o->level);
  o->share.add_option(cmd);
  cmd->callback([o, &status] { status = chaos(*o); });
}

}  // namespace cli
