// What must hold at the end of every run, faults or not: each request either
// completed with exactly its output tokens or ended with an explicit error,
// and the run ended by the scenario's deadline. Epoch fencing (no message of
// an old configuration acted on) holds by construction in EpochRuntime.
#pragma once

#include <string>
#include <vector>

#include "engine/executor.hpp"
#include "engine/scenario.hpp"

namespace engine {

// One line per violation, naming the request or event that broke it.
std::vector<std::string> check_invariants(const Scenario& s, const RunResult& r);

}  // namespace engine
