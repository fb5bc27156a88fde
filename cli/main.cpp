// The meshinfer command line: one subcommand per job (cli/*_command.cpp).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.hpp"
#include "engine/error.hpp"
#include "engine/planner.hpp"
#include "hw/platform.hpp"

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

int main(int argc, char** argv) {
  hw::record_argv0(argv[0]);
  CLI::App app{"meshinfer: LLM inference on a simulated or real mesh of machines"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("meshinfer 0.1.0 ({}), {}", MESHINFER_GIT, features()));
  int status = 0;
  cli::add_run_command(app, status);
  cli::add_validate_command(app, status);
  cli::add_plan_command(app, status);
  cli::add_calibrate_command(app, status);
  cli::add_chaos_command(app, status);
  cli::add_node_command(app, status);
  cli::add_launch_command(app, status);
  cli::add_probe_command(app, status);
  cli::add_make_model_command(app, status);
  cli::add_compare_command(app, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const engine::InputError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return cli::kExitBadInput;
  } catch (const engine::PlanError& e) {
    fmt::print(stderr, "error: cannot place the model: {}\n", e.what());
    return cli::kExitBadInput;
  }
  return status;
}
