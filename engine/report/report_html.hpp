// report.html: one self-contained page drawn from a report.json alone (inline
// CSS and SVG; no script, no font, no image, nothing fetched), so CI can
// archive it and a person can open it offline. Light and dark follow the
// viewer's prefers-color-scheme.
//
// The page's structure is a contract that tests read through the DOM:
//   figure#cluster     g.node[data-node]; line.cable[data-a][data-b][data-link][data-utilization]
//   figure#timeline    g.lane[data-kind="node"][data-node], g.lane[data-kind="link"][data-link="a-b"],
//                      g.request[data-id][data-status], line.fault-marker[data-t][data-kind][data-target],
//                      rect.phase[data-kind][data-start][data-end]
//   figure#throughput  rect.column[data-t][data-tokens-per-s]
//   figure#ttft, #itl  rect.bin[data-lo][data-count]
//   figure#per-token   g.breakdown[data-node][data-compute-ms][data-comm-ms][data-wait-ms]
//   table#expectations tr.expectation[data-metric][data-pass]
//
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace engine {

// REQUIRES: `report` follows "meshinfer.report/1" (see report.hpp).
std::string render_html(const nlohmann::ordered_json& report);

}  // namespace engine
