// report.html's charts over simulated time, on one shared x range so a moment
// lines up across them: the timeline (a lane per node and per link, then the
// requests) and the throughput, both with fault markers and recovery phases.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace engine::html {

// REQUIRES: `report` follows "meshinfer.report/1" (see report.hpp).
void timeline_chart(std::string& out, const nlohmann::ordered_json& report);
void throughput_chart(std::string& out, const nlohmann::ordered_json& report);

}  // namespace engine::html
