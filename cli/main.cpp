// meshinfer's entry point: the command line is cli::run_app's.
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/study_shard.hpp"
#include "hw/os.hpp"

int main(int argc, char** argv) {
  hw::record_argv0(argv[0]);
  const std::vector<std::string> args(argv + 1, argv + argc);
  cli::set_command_line(args);
  return cli::run_app(args);
}
