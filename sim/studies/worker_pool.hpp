// Runs many independent simulations on several cores: `jobs` worker
// processes share the items, and each item runs in its own child (SimGrid
// allows one engine per process). Results come back in item order, so the
// output does not depend on the job count.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/isolated.hpp"

namespace sim {

std::vector<IsolatedResult> run_parallel(int items, int jobs, const std::function<std::string(int)>& fn);

}  // namespace sim
