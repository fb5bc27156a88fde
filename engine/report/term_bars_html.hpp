// Bars of a token's seven terms (bottleneck.hpp) with the floor marked: a
// decode token on each node (report.html) and the scaling view, one bar per
// node count (report.html and plan.html draw the same one).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace engine::html {

using TermRows = std::vector<std::pair<std::string, const nlohmann::ordered_json*>>;  // (label, its terms)

// figure#`id`: one stacked bar per row, g.breakdown[data-label][data-token-ms][data-floor-ms].
void term_bars(std::string& out, const char* id, const std::string& title, const TermRows& rows);

// report.json's bottleneck.scaling or plan.json's scaling (sim/studies/scaling.hpp):
// figure#scaling, a bar per simulated node count, then ul#scaling-limits with
// the term that held each count back, or why a count was dropped.
void scaling_chart(std::string& out, const nlohmann::ordered_json& scaling);

}  // namespace engine::html
