// report.md: the report as Markdown tables (summary, plan, nodes, links,
// expectations), ready for a CI job summary.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace engine {

// REQUIRES: `report` follows "meshinfer.report/1" (see report.hpp).
std::string render_markdown(const nlohmann::ordered_json& report);

}  // namespace engine
