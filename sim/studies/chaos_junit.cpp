#include "sim/studies/chaos_junit.hpp"

#include <fmt/format.h>

#include "engine/report/junit.hpp"

namespace sim {

std::string render_chaos_junit(const nlohmann::ordered_json& campaign) {
  const std::string scenario = campaign["scenario"].get<std::string>();
  std::vector<engine::JunitSuite> suites;
  for (const auto& row : campaign["runs"]) {
    const auto seed = row["seed"].get<unsigned long long>();
    const std::string schedule = row["schedule"].dump();
    engine::JunitSuite suite{fmt::format("{} seed {}", scenario, seed),
                             {{"seed", std::to_string(seed)}, {"faults", schedule}},
                             {},
                             false,
                             ""};
    if (row.contains("crashed")) {
      suite.errored = true;
      suite.error = fmt::format("the simulation died: {}", row["crashed"].get<std::string>());
    } else {
      std::vector<engine::InvariantCheck> checks;
      for (const auto& c : row["invariant_checks"])
        checks.push_back({c["invariant"].get<std::string>(), c["violations"].get<std::vector<std::string>>()});
      engine::add_invariant_cases(fmt::format("chaos.{}.seed-{}", scenario, seed), checks, suite);
      // What a reader needs to reproduce a violation: the seed alone, or its faults pasted into the scenario.
      for (auto& c : suite.cases)
        if (c.failed)
          c.details +=
              fmt::format("replay: the same chaos command with --seeds {0}..{0}\nfaults: {1}\n", seed, schedule);
    }
    suites.push_back(std::move(suite));
  }
  return engine::render_junit("meshinfer chaos " + scenario, suites);
}

}  // namespace sim
