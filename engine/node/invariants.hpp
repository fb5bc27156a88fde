// What must hold at the end of every run, faults or not: each request either
// completed with exactly its output tokens or ended with an explicit error,
// and the run ended by the scenario's deadline. Epoch fencing (no message of
// an old configuration acted on) holds by construction in EpochRuntime.
#pragma once

#include <string>
#include <vector>

#include "engine/input/scenario.hpp"
#include "engine/node/run_result.hpp"

namespace engine {

// One invariant, named for what it promises, with one line per violation
// naming the request or event that broke it (none: it held).
struct InvariantCheck {
  std::string name;
  std::vector<std::string> violations;
};

// Every invariant, in a fixed order, whether it held or not.
std::vector<InvariantCheck> check_invariants(const Scenario& s, const RunResult& r);

// The violations of all `checks`, in order: report.json's "invariants".
std::vector<std::string> all_violations(const std::vector<InvariantCheck>& checks);

}  // namespace engine
