// Runs a function in a child process and returns what it printed to a string.
// SimGrid allows one engine per process, so tests, sweeps and calibration run
// each simulation this way.
#pragma once

#include <functional>
#include <string>

namespace sim {

struct IsolatedResult {
  bool ok = false;     // the function returned normally
  std::string output;  // its return value, or the error / signal that ended it
};

IsolatedResult run_isolated(const std::function<std::string()>& fn);

}  // namespace sim
