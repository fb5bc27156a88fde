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

// The metric's value in the report; none when the run never produced it.
std::optional<double> metric_value(const ordered_json& report, const std::string& metric) {
  for (const auto& [name, path] : kMetricPaths) {
    if (name != metric) continue;
    const ordered_json::json_pointer ptr{std::string(path)};
    // Only recovery_s may be absent: a run in which nothing recovered has none.
    if (!report.contains(ptr)) return std::nullopt;
    return report.at(ptr).get<double>();
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
    const std::optional<double> value = metric_value(report, e.metric);
    const bool pass = value ? holds(e, *value) : e.may_be_absent;
    results.push_back({e, value, pass, s.file});
    out.push_back({{"metric", e.metric},
                   {"op", e.op},
                   {"bound", e.bound},
                   {"value", value ? ordered_json(*value) : ordered_json(nullptr)},
                   {"exercised", value.has_value()},
                   {"pass", pass}});
  }
  report["expectations"] = std::move(out);
  return results;
}

std::string value_text(const std::optional<double>& value) {
  return value ? fmt::format("{:g}", *value) : "not exercised";
}

std::string describe_breach(const ExpectationResult& r) {
  if (!r.value)
    return fmt::format(
        "expectation failed: {} was not exercised (the run never produced it), must be {} {:g} ({} {}); say "
        "\"may_be_absent\": true if a run may pass without it",
        r.e.metric, op_symbol(r.e.op), r.e.bound, r.file, r.e.json_path);
  return fmt::format("expectation failed: {} = {:g}, must be {} {:g} ({} {})", r.e.metric, *r.value, op_symbol(r.e.op),
                     r.e.bound, r.file, r.e.json_path);
}

}  // namespace engine
