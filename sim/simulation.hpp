// One SimGrid run: builds the platform, starts one actor per node running
// engine code against a SimRuntime, and runs to completion.
// REQUIRES: at most one Simulation per process (SimGrid's engine is a
// singleton); run several in child processes with run_isolated().
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime.hpp"
#include "sim/platform.hpp"

namespace simgrid::s4u {
class Engine;
}

namespace sim {

using NodeMain = std::function<void(engine::Runtime&)>;

class Simulation {
 public:
  explicit Simulation(PlatformSpec platform);
  ~Simulation();

  const PlatformSpec& platform() const { return platform_; }
  // Starts `main` on every node at time 0.
  void spawn_all(const NodeMain& main);
  // Runs until every actor ended; returns the simulated end time.
  double run();
  // An exception that escaped a node's main, by rank (empty: none).
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  PlatformSpec platform_;
  std::unique_ptr<simgrid::s4u::Engine> engine_;
  std::vector<std::string> errors_;
};

}  // namespace sim
