#include "support/simulated_report.hpp"

#include <stdexcept>

#include "engine/cards/stack_profile.hpp"
#include "engine/input/scenario_file.hpp"
#include "engine/input/workload.hpp"
#include "engine/plan/planner.hpp"
#include "engine/report/report.hpp"
#include "sim/child_run.hpp"
#include "sim/scenario_run.hpp"

namespace testsupport {

nlohmann::ordered_json simulated_report(const engine::Scenario& s, const std::vector<engine::LinkCard>& cards) {
  const auto r = sim::run_in_child([&] {
    auto catalog = engine::catalog_for(s, engine::Catalog::builtin());  // with the card of a model directory
    for (const engine::LinkCard& card : cards) catalog.add(card);
    const auto profile = engine::StackProfile::load(catalog.dir(), s.profile);
    const auto plan = engine::make_plan(s, catalog, s.parallelism.value());
    const auto result = sim::simulate(s, catalog, plan, profile, engine::make_requests(s.workload, s.seed));
    return engine::build_report(s, catalog, plan, profile.name, result, s.seed).dump();
  });
  if (!r.ok) throw std::runtime_error(r.output);
  return nlohmann::ordered_json::parse(r.output);
}

}  // namespace testsupport
