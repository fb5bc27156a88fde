// The whole report of a simulated scenario, built in a child process (SimGrid
// allows one engine per process), as the sim tests read it.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "engine/cards/cards.hpp"
#include "engine/input/scenario.hpp"

namespace testsupport {

// REQUIRES: s.parallelism is set. `cards` replace the built-in cards of their names.
// Throws std::runtime_error with what ended the child when the run failed.
nlohmann::ordered_json simulated_report(const engine::Scenario& s, const std::vector<engine::LinkCard>& cards = {});

}  // namespace testsupport
