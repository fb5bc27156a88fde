// A chaos campaign as JUnit XML: one <testsuite> per seed, each invariant a
// <testcase>, a violation's failure carrying the fault schedule that replays it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sim {

// REQUIRES: `campaign` is run_chaos's result.
std::string render_chaos_junit(const nlohmann::ordered_json& campaign);

}  // namespace sim
