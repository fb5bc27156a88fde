// meshinfer's entry point: `launch` and `node` run here, in a program that
// links no simulator; every other command (and a launch whose plan the
// simulator's trials pick) in meshinfer-sim, which this process becomes
// (cli/simulator_program.hpp). The command line is cli::run_app's either way.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/run_cli.hpp"
#include "cli/simulator_program.hpp"
#include "hw/os.hpp"

int main(int argc, char** argv) {
  hw::record_argv0(argv[0]);
  cli::keep_command_line(argv);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || (args[0] != "launch" && args[0] != "node")) {
    try {
      cli::become_simulator();
    } catch (const std::exception& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      return cli::kExitFailed;
    }
  }
  CLI::App app{"meshinfer: LLM inference on a simulated or real mesh of machines"};
  app.require_subcommand(1);
  int status = 0;
  cli::add_launch_command(app, status);
  cli::add_node_command(app, status);
  return cli::run_cli(app, args, status);
}
