#include "engine/report/expectations.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace engine {

namespace {

using nlohmann::ordered_json;

// Where each metric of kMetrics lives in the report.
constexpr std::pair<std::string_view, std::string_view> kMetricPaths[] = {
    {"decode_tokens_per_s", "/summary/decode_tokens_per_s"},
    {"prefill_tokens_per_s", "/summary/prefill_tokens_per_s"},
    {"ttft_p50_s", "/summary/ttft_s/p50"},
    {"ttft_p99_s", "/summary/ttft_s/p99"},
    {"itl_p50_s", "/summary/itl_s/p50"},
    {"itl_p99_s", "/summary/itl_s/p99"},
    {"failed_requests", "/summary/requests/failed"},
    {"completed_requests", "/summary/requests/completed"},
    {"simulated_s", "/summary/simulated_s"},
    {"uptime", "/summary/uptime"},
    {"request_success", "/summary/request_success"},
    {"recovery_s", "/summary/recovery_s"},
};

double metric_value(const ordered_json& report, const std::string& metric) {
  for (const auto& [name, path] : kMetricPaths) {
    if (name != metric) continue;
    const ordered_json::json_pointer ptr{std::string(path)};
    // Only recovery_s may be absent: a run without a fault has no recovery.
    return report.contains(ptr) ? report.at(ptr).get<double>() : 0.0;
  }
  throw std::invalid_argument(fmt::format("unknown metric '{}'", metric));
}

bool holds(const Expectation& e, double value) {
  if (e.op == "min") return value >= e.bound;
  if (e.op == "max") return value <= e.bound;
  if (e.op == "eq") return std::abs(value - e.bound) <= 1e-9;
  throw std::invalid_argument(fmt::format("unknown expectation op '{}'", e.op));
}

}  // namespace

const char* op_symbol(const std::string& op) { return op == "min" ? ">=" : op == "max" ? "<=" : "=="; }

std::vector<ExpectationResult> check_expectations(const Scenario& s, ordered_json& report) {
  std::vector<ExpectationResult> results;
  ordered_json out = ordered_json::array();
  for (const Expectation& e : s.expectations) {
    const double value = metric_value(report, e.metric);
    const bool pass = holds(e, value);
    results.push_back({e, value, pass, s.file});
    out.push_back({{"metric", e.metric}, {"op", e.op}, {"bound", e.bound}, {"value", value}, {"pass", pass}});
  }
  report["expectations"] = std::move(out);
  return results;
}

std::string describe_breach(const ExpectationResult& r) {
  return fmt::format("expectation failed: {} = {:g}, must be {} {:g} ({} {})", r.e.metric, r.value, op_symbol(r.e.op),
                     r.e.bound, r.file, r.e.json_path);
}

}  // namespace engine
