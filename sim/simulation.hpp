// One SimGrid run: builds the platform, starts one actor per node running
// engine code against a SimRuntime, and runs to completion.
// REQUIRES: at most one Simulation per process (SimGrid's engine is a
// singleton); run several in child processes with run_in_child().
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/enums.hpp"
#include "engine/base/events.hpp"
#include "engine/base/runtime.hpp"
#include "sim/flow_board.hpp"
#include "sim/platform.hpp"
#include "sim/sim_runtime.hpp"

namespace simgrid::s4u {
class Engine;
}

namespace sim {

using NodeMain = std::function<void(engine::Runtime&)>;

class Simulation {
 public:
  // `level`: how the engines' size-only collectives are timed (flow_board.hpp).
  explicit Simulation(PlatformSpec platform, engine::SimulationLevel level = engine::SimulationLevel::kMessage);
  ~Simulation();

  const PlatformSpec& platform() const { return platform_; }
  // Starts `main` on every node at time 0 and, when given, `companion` beside
  // it on channel 1 (heartbeats): a daemon, ended when every main has ended.
  void spawn_all(const NodeMain& main, const NodeMain& companion = {});
  // Runs until every node's main ended; returns the simulated time it did.
  double run();
  // Per-rank compute speed factors that SimRuntime::compute divides by; 0
  // while the node is hung (its processes frozen, its links still up).
  std::vector<double>& speed() { return speed_; }
  // True once the RDMA stack failed under IP that goes on (the injector sets
  // it): the engines' queue pairs fail, not the cables (SimRuntime).
  bool& rdma_failed() { return rdma_failed_; }
  // Nothing changes the platform before `t`: no fault comes sooner and the
  // deadline is no earlier. Until then an engine at the flow level counts its
  // collectives and compute on its own clock and posts its next collective at
  // that time; SimGrid's clock catches up at its next message or sleep
  // (SimRuntime's deferred time). Default: never.
  void set_quiet_until(double t) { quiet_until_s_ = t; }
  // A host outside the mesh for actors that model the world (fault injection).
  static constexpr const char* kControlHost = "control";
  // An exception that escaped a node's main, by rank (empty: none).
  const std::vector<std::string>& errors() const { return errors_; }
  // What each node took from each other on the engine's channel, by (sender,
  // receiver): SimRuntime numbers that channel's messages.
  std::vector<engine::Sequence> sequences() const;

 private:
  PlatformSpec platform_;
  std::unique_ptr<simgrid::s4u::Engine> engine_;
  std::vector<std::string> errors_;
  std::vector<Numbering> numbering_;  // at [sender * nodes + receiver]
  std::vector<double> speed_;
  bool rdma_failed_ = false;
  std::unique_ptr<FlowBoard> flows_;  // the flow level's; none at the message level
  double end_s_ = 0;
  double quiet_until_s_ = 0;
};

// At `deadline_s`, if nodes still run, ends every actor and notes it: a run
// never outlives its scenario's deadline. A daemon: it does not keep an
// otherwise finished simulation alive.
void start_deadline_watchdog(double deadline_s, std::vector<engine::RunEvent>& log);

}  // namespace sim
