// Applies a scenario's timed faults to the simulated platform: cables go
// down, degrade and flap; hosts crash, hang, slow down and restart; the RDMA
// fabric fails as a whole. Runs as an actor on the control host.
#pragma once

#include <string>
#include <vector>

#include "engine/base/events.hpp"
#include "engine/cards/catalog.hpp"
#include "engine/faults/cable_holds.hpp"
#include "engine/input/scenario.hpp"
#include "sim/simulation.hpp"

namespace sim {

// Every fault applied is appended to `log` at its time.
// REQUIRES: the injector, `simulation` and `log` outlive the run.
class FaultInjector {
 public:
  FaultInjector(const engine::Scenario& s, const engine::Catalog& catalog, Simulation& simulation,
                std::vector<engine::RunEvent>& log)
      : s_(s),
        catalog_(catalog),
        sim_(simulation),
        log_(log),
        hangs_(s.nodes.size(), 0),
        throttle_(s.nodes.size(), 1.0) {}
  // One actor per fault, so overlapping faults keep their own timelines.
  void start();

 private:
  void apply(const engine::FaultSpec& f);
  void restart(int node, const std::string& cause);
  void note(const std::string& kind, const std::string& target, const std::string& detail);
  // A node computes at its throttle, and not at all while any hang on it lasts
  // (hangs may overlap: the node answers again when the last one ends).
  void update_speed(int node);
  // Turns the fault's cable on or off as engine::CableHolds rules after `change`.
  void hold_cable(const engine::FaultSpec& f, engine::CableHolds::Change change);

  const engine::Scenario& s_;
  const engine::Catalog& catalog_;
  Simulation& sim_;
  std::vector<engine::RunEvent>& log_;
  std::vector<int> hangs_;        // per node: hangs in progress
  std::vector<double> throttle_;  // per node: the speed factor a node-slow left
  engine::CableHolds holds_;      // per SimGrid cable link
};

// The SimGrid link that carries the cable between nodes a and b.
std::string cable_link_name(const PlatformSpec& p, int a, int b);

// Whether the simulator models faults of kind `k`: all but rdma-packet-loss,
// which only softrdma carries out (on real processes).
bool simulated(engine::FaultKind k);
// Throws InputError (the scenario's file, /faults/I/kind, why) for the first
// fault of `s` the simulator does not model.
void refuse_unsimulated(const engine::Scenario& s);

}  // namespace sim
