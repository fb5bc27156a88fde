// A scenario's `expect` block checked against a report: the "expectations"
// section of report.json and the message a failed run prints.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/input/scenario.hpp"

namespace engine {

struct ExpectationResult {
  Expectation e;
  std::optional<double> value;  // none: the run never produced the metric (not exercised)
  bool pass = false;
  std::string file;  // the scenario file, for describe_breach
};

// Evaluates s.expectations against report["summary"] and writes
// report["expectations"]. A metric the run never produced (recovery_s when
// nothing recovered) fails as not exercised, unless the expectation allows it.
std::vector<ExpectationResult> check_expectations(const Scenario& s, nlohmann::ordered_json& report);

// "expectation failed: decode_tokens_per_s = 18.2, must be >= 25 (x.json /expect/decode_tokens_per_s/min)"
std::string describe_breach(const ExpectationResult& result);
// "18.2", or "not exercised" for a metric the run never produced.
std::string value_text(const std::optional<double>& value);

// ">=", "<=" or "==" for an expectation's op ("min", "max", "eq").
const char* op_symbol(const std::string& op);

}  // namespace engine
