// Each subcommand registers itself on the app; its callback stores the exit
// status. Errors of input (exit 2) and any other error (exit 3) are thrown
// and reported by main(): no exception ends the process unreported.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/enums.hpp"
#include "session/exit_status.hpp"

namespace cli {

using session::kExitBadInput, session::kExitBreach, session::kExitFailed;

// Parses `args` (without the program name) and runs the subcommand: main's
// work, and `meshinfer merge`'s when it replays a sharded command.
int run_app(std::vector<std::string> args);

void add_run_command(CLI::App& app, int& status);
void add_validate_command(CLI::App& app, int& status);
void add_plan_command(CLI::App& app, int& status);
void add_calibrate_command(CLI::App& app, int& status);
void add_chaos_command(CLI::App& app, int& status);
void add_merge_command(CLI::App& app, int& status);
void add_node_command(CLI::App& app, int& status);
// The node command's options and callback on `cmd`: meshinfer-node's whole command line.
void add_node_options(CLI::App* cmd, int& status);
void add_launch_command(CLI::App& app, int& status);
void add_probe_command(CLI::App& app, int& status);
void add_make_model_command(CLI::App& app, int& status);
void add_compare_command(CLI::App& app, int& status);
void add_doctor_command(CLI::App& app, int& status);
void add_rdma_check_command(CLI::App& app, int& status);

// --level message|flow: how the simulator times collectives, over the scenario's
// simulation_level (engine/base/enums.hpp).
void add_level_option(CLI::App* cmd, std::optional<engine::SimulationLevel>& level);

}  // namespace cli
