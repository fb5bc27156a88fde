// What meshinfer and meshinfer-node share of a command line: parsing it,
// and every error mapped to `error:` and its exit status (session/exit_status.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace cli {

// Parses `args` (without the program name) into `app`, whose callbacks run
// and set `status`; returns it, or the status of the error that ended them.
int run_cli(CLI::App& app, std::vector<std::string> args, const int& status);

// What `--version` prints: version, git id, transports, OS calls.
std::string version_line();

}  // namespace cli
