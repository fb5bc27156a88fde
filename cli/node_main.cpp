// meshinfer-node: one rank of a real run, what `meshinfer launch` starts on
// each machine. The same command line as `meshinfer node`, without the
// simulator: the launch chose the plan and passes it on (--parallelism).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/run_cli.hpp"
#include "hw/os.hpp"

int main(int argc, char** argv) {
  hw::record_argv0(argv[0]);
  CLI::App app{"meshinfer-node: one rank of a scenario as a real process (see meshinfer launch)"};
  app.set_version_flag("--version", cli::version_line());
  int status = 0;
  cli::add_node_options(&app, status);
  return cli::run_cli(app, std::vector<std::string>(argv + 1, argv + argc), status);
}
