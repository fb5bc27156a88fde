// The meshinfer command line: one subcommand per job (cli/*_command.cpp).
#include <CLI/CLI.hpp>
#include <utility>

#include "cli/commands.hpp"
#include "cli/run_cli.hpp"

namespace cli {

void add_level_option(CLI::App* cmd, std::optional<engine::SimulationLevel>& level) {
  const auto& names = engine::Names<engine::SimulationLevel>::value;
  cmd->add_option_function<std::string>(
         "--level", [&level](const std::string& name) { level = engine::parse_name<engine::SimulationLevel>(name); },
         "how collectives are timed: message (each message, the reference) or flow (each collective as a whole)")
      ->check(CLI::IsMember(std::vector<std::string>(names.begin(), names.end())));
}

int run_app(std::vector<std::string> args) {
  CLI::App app{"meshinfer: LLM inference on a simulated or real mesh of machines"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_line());
  int status = 0;
  add_run_command(app, status);
  add_validate_command(app, status);
  add_plan_command(app, status);
  add_calibrate_command(app, status);
  add_chaos_command(app, status);
  add_merge_command(app, status);
  add_node_command(app, status);
  add_launch_command(app, status);
  add_probe_command(app, status);
  add_make_model_command(app, status);
  add_compare_command(app, status);
  add_doctor_command(app, status);
  add_rdma_check_command(app, status);
  return run_cli(app, std::move(args), status);
}

}  // namespace cli
