// report.json's "timeline" (the run in equal time buckets) and "distributions"
// (TTFT and ITL histograms on round bins); report.hpp documents their keys and
// how steps are spread over buckets.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/cards/catalog.hpp"
#include "engine/input/scenario.hpp"
#include "engine/node/run_result.hpp"

namespace engine {

// REQUIRES: r.nodes has one entry per s.nodes entry.
nlohmann::ordered_json timeline_json(const Scenario& s, const Catalog& catalog, const RunResult& r);

nlohmann::ordered_json distributions_json(const RunResult& r);

// The smallest of 1, 2 or 5 times a power of ten that is >= raw (> 0):
// histogram bin widths here, axis tick steps in report.html.
double nice_step(double raw);

}  // namespace engine
