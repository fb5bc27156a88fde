// Runs the meshinfer binary as a user would and captures what it printed.
#pragma once

#include <string>

namespace testsupport {

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CliResult run_cli(const std::string& args);
std::string read_file(const std::string& path);
// A fresh empty directory under the test temp dir.
std::string fresh_dir(const std::string& name);

}  // namespace testsupport
