#include "cli/simulator_program.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "hw/os.hpp"

namespace cli {

namespace {
char** g_argv = nullptr;
}  // namespace

void keep_command_line(char** argv) { g_argv = argv; }

void become_simulator() {
  const std::string program = (std::filesystem::path(hw::self_executable()).parent_path() / "meshinfer-sim").string();
  ::execv(program.c_str(), g_argv);
  throw std::runtime_error("cannot run " + program + " (the simulator's commands): " + std::strerror(errno));
}

}  // namespace cli
