// Chaos campaigns: the scenario under a random fault schedule per seed,
// reproducible from the seed alone, many seeds in parallel workers.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/input/scenario.hpp"
#include "sim/studies/worker_pool.hpp"

namespace sim {

struct ChaosQuery {
  unsigned long long first_seed = 1, last_seed = 100;
  std::vector<engine::FaultKind> kinds;  // fault kinds to draw from
  Workers workers;
};

// The faults seed `seed` injects into `s`: one to three, at random times
// inside the run's expected span, on random nodes and cables.
std::vector<engine::FaultSpec> chaos_faults(const engine::Scenario& s, const std::vector<engine::FaultKind>& kinds,
                                            unsigned long long seed, double span_s);

// Runs every seed; the result lists each seed's outcome and the totals.
nlohmann::ordered_json run_chaos(const engine::Scenario& s, const engine::Catalog& catalog, const ChaosQuery& q);

std::string render_chaos_table(const nlohmann::ordered_json& campaign);

}  // namespace sim
