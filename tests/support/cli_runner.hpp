// Runs the meshinfer binary as a user would and captures what it printed.
#pragma once

#include <string>

namespace testsupport {

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CliResult run_cli(const std::string& args);
// Runs a shell command; `output` is what it printed on stdout (redirect stderr in `command`).
CliResult run_shell(const std::string& command);
std::string read_file(const std::string& path);
// A fresh empty directory under the test temp dir.
std::string fresh_dir(const std::string& name);

}  // namespace testsupport
