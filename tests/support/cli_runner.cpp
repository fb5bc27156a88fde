#include "support/cli_runner.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "hw/shell.hpp"

namespace testsupport {

CliResult run_cli(const std::string& args) { return run_shell(std::string(MESHINFER_BINARY) + " " + args + " 2>&1"); }

CliResult run_shell(const std::string& command) {
  const hw::ShellResult r = hw::run_shell(command);
  return {r.exit_code, r.output};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("meshinfer-test-" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace testsupport
