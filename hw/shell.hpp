// Runs a command line through /bin/sh and captures what it printed: for the
// tools hw/ drives rather than calls (ip, tc).
#pragma once

#include <string>

namespace hw {

struct ShellResult {
  int exit_code = -1;  // -1 when it did not exit normally
  std::string output;  // its stdout (redirect stderr in the command to keep it)
};

ShellResult run_shell(const std::string& command);

// Runs `command` (stderr kept); throws with the command and its output when it fails.
void run_shell_or_throw(const std::string& command);

}  // namespace hw
