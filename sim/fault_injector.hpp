// Applies a scenario's timed faults to the simulated platform: cables go
// down, degrade and flap; hosts crash, hang, slow down and restart; the RDMA
// fabric fails as a whole. Runs as an actor on the control host.
#pragma once

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "engine/catalog.hpp"
#include "engine/events.hpp"
#include "engine/scenario.hpp"
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
  // Faults may hold one cable down at once (a link-down, a flap's down phase):
  // it carries traffic again only when none does, and an RDMA cable never
  // after the RDMA stack failed. `change`: +1 holds, -1 releases, kReplugged
  // (a link-up) releases every hold.
  void hold_cable(const engine::FaultSpec& f, int change);
  static constexpr int kReplugged = -std::numeric_limits<int>::max();

  const engine::Scenario& s_;
  const engine::Catalog& catalog_;
  Simulation& sim_;
  std::vector<engine::RunEvent>& log_;
  std::vector<int> hangs_;            // per node: hangs in progress
  std::vector<double> throttle_;      // per node: the speed factor a node-slow left
  std::map<std::string, int> holds_;  // per SimGrid cable link: faults holding it down
  bool rdma_failed_ = false;
};

// The SimGrid link that carries the cable between nodes a and b.
std::string cable_link_name(const PlatformSpec& p, int a, int b);

}  // namespace sim
