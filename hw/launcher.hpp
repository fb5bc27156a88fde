// Starts one process per rank and waits for all of them, forwarding their
// output line by line with a "[rank R] " prefix. They share one process group,
// killed as a whole on timeout, on SIGINT/SIGTERM, or when the launcher dies.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "hw/cluster.hpp"

namespace hw {

struct LaunchResult {
  std::vector<int> status;  // by rank: exit code, or 128 + the signal that ended it
  bool timed_out = false;
  bool interrupted = false;
  std::vector<std::string> output, errors;  // by rank: stdout and stderr, when captured
};

// What a caller watches while the ranks run (all optional).
struct LaunchHooks {
  std::function<void(int rank, const std::string& line)> on_line;  // each line a rank printed, unprefixed
  std::function<void(const std::vector<pid_t>& pids)> on_tick;  // every ~10 ms while any rank runs; -1 for an ended one
  // After each tick: ranks to start again now with their first command (a
  // restarted node). One whose process still runs is not started twice.
  std::function<std::vector<int>()> restart;
};

// `inherit[r]`: descriptors rank r's process keeps across exec (every other
// one it closes); this process closes them once every rank has started.
// REQUIRES: every argv non-empty (argv[0] found on PATH or a path).
// `capture`: keep each rank's output in the result instead of forwarding it.
// Each process reads `stdin_text` on its standard input (then end of file),
// where no other process, nor `ps`, can see it; without it, the launcher's stdin.
LaunchResult launch_processes(const std::vector<std::vector<std::string>>& argvs, double timeout_s,
                              bool capture = false, const LaunchHooks& hooks = {}, const std::string& stdin_text = "",
                              const std::vector<std::vector<int>>& inherit = {});

// Prints each command (a dry run: returns 0), or launches them and says
// which rank ended badly and why all were killed, then the outcome the
// reporting rank printed; returns that rank's status (rank 0's when none
// reported: a rank lost to a fault of the scenario is not the run's verdict).
int run_ranks(const std::vector<std::vector<std::string>>& argvs, double timeout_s, bool dry_run,
              const LaunchHooks& hooks = {}, const std::string& stdin_text = "",
              const std::vector<std::vector<int>>& inherit = {});

// What starts rank r: `exec_prefix` (its "{rank}" and "{host}" replaced,
// split on spaces) before `command` when given; else `command` itself for a
// local host, or `ssh HOST` with the command shell-quoted for a remote one.
std::vector<std::string> rank_command(const ClusterSpec& c, int r, const std::string& exec_prefix,
                                      const std::vector<std::string>& command);

}  // namespace hw
