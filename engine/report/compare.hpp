// Two runs' report.json side by side (`meshinfer compare`), e.g. a scenario
// simulated and the same scenario on real processes. What the engine decided
// must match exactly: each request's outcome and tokens, the recovery
// decisions, the link cards. Timings may differ by what their mechanism
// allows: detection and recovery in heartbeat periods, speeds and latencies
// relatively. Every row says the tolerance it was judged by.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace engine {

struct CompareRow {
  std::string what;       // e.g. "request 3", "decode tokens/s"
  std::string a, b;       // the two values, as printed
  std::string tolerance;  // "exact", "±0.30 s (timeout + 1 heartbeat)", "±15%"
  bool agree = true;
};

struct CompareOptions {
  double relative = 0.15;  // speeds, TTFT, ITL: |a - b| <= relative * max(a, b)
};

// REQUIRES: both are "meshinfer.report/1" documents; a missing or mistyped key
// throws InputError naming the file and its JSON path.
std::vector<CompareRow> compare_reports(const nlohmann::json& a, const std::string& file_a, const nlohmann::json& b,
                                        const std::string& file_b, const CompareOptions& o = {});

// A markdown table of the rows, the disagreeing ones marked.
std::string render_comparison(const std::vector<CompareRow>& rows, const std::string& file_a,
                              const std::string& file_b);

}  // namespace engine
