#include "hw/shell.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <stdexcept>

namespace hw {

ShellResult run_shell(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + command);
  ShellResult r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

void run_shell_or_throw(const std::string& command) {
  const ShellResult r = run_shell(command + " 2>&1");
  if (r.exit_code != 0) throw std::runtime_error(command + " failed: " + r.output);
}

}  // namespace hw
