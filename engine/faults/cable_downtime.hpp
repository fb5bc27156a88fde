// When each cable of a scenario carried nothing: its fault schedule's actions
// (fault_schedule.hpp) under the hold rules both worlds apply (cable_holds.hpp),
// so a report draws a cable down exactly while the run had it down.
#pragma once

#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/input/scenario.hpp"

namespace engine {

struct Downtime {
  double from_s = 0;
  double to_s = -1;  // when it carried traffic again; -1: still down when the run ended
};

// Per cable of s.fabric.cables, in order, its downtimes before `end_s` (the
// run's end; actions due later were never applied). A fault on a pair takes
// the first cable between them, as the worlds do; on a switched link it takes
// the first node's NIC, so every cable of that node on the switch.
std::vector<std::vector<Downtime>> cable_downtimes(const Scenario& s, const Catalog& catalog, double end_s);

}  // namespace engine
