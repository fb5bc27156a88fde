// Runs a function in a child process and returns what it printed to a string.
// SimGrid allows one engine per process, so tests, sweeps and calibration run
// each simulation this way.
#pragma once

#include <functional>
#include <string>

namespace sim {

struct ChildResult {
  bool ok = false;     // the function returned normally
  std::string output;  // its return value, or the error / signal that ended it
};

ChildResult run_in_child(const std::function<std::string()>& fn);

}  // namespace sim
