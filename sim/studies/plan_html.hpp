// plan.html: the page of a "meshinfer.plan/1" plan.json (run_plan_sweep), drawn
// with report.html's SVG pieces, self-contained like it.
//   figure#speed-by-nodes  circle.point[data-link][data-nodes][data-tokens-per-s],
//                          polyline.best per link
//   figure#ttft-by-nodes   circle.point[data-link][data-nodes][data-ttft-s],
//                          polyline.best per link; line.slo[data-ttft-s] with a TTFT SLO
//   figure#price-vs-speed  circle.point[data-index][data-price], .chosen on the
//                          cheapest meeting the SLO and the fastest; line.slo
//   section#what-each-node-buys  the scaling view as report.html draws it
//                          (engine/report/term_bars_html.hpp): figure#scaling, ul#scaling-limits
//   table#candidates       tr[data-index] per simulated candidate, with its verdict
//   table#dropped          tr[data-index] per dropped or failed candidate, with why
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sim {

// REQUIRES: `plan` follows "meshinfer.plan/1".
std::string render_plan_html(const nlohmann::ordered_json& plan);

}  // namespace sim
