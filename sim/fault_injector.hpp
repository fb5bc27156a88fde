// The simulator's actuator of a scenario's faults: cables go down, degrade
// and flap; hosts crash, hang, slow down and restart; the RDMA stack fails as
// a whole (its cables dark or, where IP survives it, the engines' queue pairs
// failed: SimRuntime). Runs as actors on the control host.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/events.hpp"
#include "engine/cards/catalog.hpp"
#include "engine/faults/cable_holds.hpp"
#include "engine/faults/fault_schedule.hpp"
#include "engine/input/scenario.hpp"
#include "sim/simulation.hpp"

namespace sim {

// Carries out a scenario's fault actions (engine/faults/fault_schedule.hpp)
// on the platform, each noted in `log` at its time.
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
  void apply(const engine::FaultAction& a);
  // Turns the cable a-b on or off as engine::CableHolds rules after `change`.
  void hold_cable(int a, int b, engine::CableHolds::Change change);
  // Degrades the action's cable, or restores what its fault degraded.
  void degrade(const engine::FaultAction& a);
  // A node computes at its throttle, and not at all while any hang on it lasts
  // (hangs may overlap: the node answers again when the last one ends).
  void update_speed(int node);

  const engine::Scenario& s_;
  const engine::Catalog& catalog_;
  Simulation& sim_;
  std::vector<engine::RunEvent>& log_;
  std::vector<int> hangs_;        // per node: hangs in progress
  std::vector<double> throttle_;  // per node: the speed factor a node-slow left
  engine::CableHolds holds_;      // per SimGrid cable link
  std::map<int, std::pair<double, double>> undegraded_;  // per degrading fault: bandwidth and latency before it
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
