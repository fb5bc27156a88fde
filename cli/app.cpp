// The meshinfer command line: one subcommand per job (cli/*_command.cpp).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "cli/commands.hpp"
#include "engine/base/build_info.hpp"
#include "engine/base/error.hpp"
#include "engine/plan/planner.hpp"
#include "hw/platform.hpp"

namespace cli {

namespace {

std::string features() {
#ifdef MESHINFER_HAVE_VERBS
  const std::string transports = std::string("transports: tcp, verbs (") + MESHINFER_VERBS_LIB + ")";
#else
  const char* transports = "transports: tcp (verbs transport not built: no verbs library and header found)";
#endif
  return fmt::format("{}, OS calls: {}", transports, hw::platform_name());
}

}  // namespace

void add_level_option(CLI::App* cmd, std::optional<engine::SimulationLevel>& level) {
  const auto& names = engine::Names<engine::SimulationLevel>::value;
  cmd->add_option_function<std::string>(
         "--level", [&level](const std::string& name) { level = engine::parse_name<engine::SimulationLevel>(name); },
         "how collectives are timed: message (each message, the reference) or flow (each collective as a whole)")
      ->check(CLI::IsMember(std::vector<std::string>(names.begin(), names.end())));
}

std::string version_line() {
  return fmt::format("meshinfer {} ({}), {}", engine::kVersion, engine::kGitCommit, features());
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
  try {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // A bad flag is bad input, as a bad scenario is: `error:` and exit 2, not CLI11's own codes (105, 106, ...).
    fmt::print(stderr, "error: {}\nRun with --help for more information.\n", e.what());
    return kExitBadInput;
  } catch (const engine::InputError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitBadInput;
  } catch (const engine::PlanError& e) {
    fmt::print(stderr, "error: cannot place the model: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitFailed;
  }
  return status;
}

}  // namespace cli
