// A scenario's `expect` block checked against a report: the "expectations"
// section of report.json and the message a failed run prints.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/scenario.hpp"

namespace engine {

struct ExpectationResult {
  Expectation e;
  double value = 0;
  bool pass = false;
  std::string file;  // the scenario file, for describe_breach
};

// Evaluates s.expectations against report["summary"] and writes
// report["expectations"]. recovery_s reads summary.recovery_s, 0 when absent.
std::vector<ExpectationResult> check_expectations(const Scenario& s, nlohmann::ordered_json& report);

// "expectation failed: decode_tokens_per_s = 18.2, must be >= 25 (x.json /expect/decode_tokens_per_s/min)"
std::string describe_breach(const ExpectationResult& result);

// ">=", "<=" or "==" for an expectation's op ("min", "max", "eq").
const char* op_symbol(const std::string& op);

}  // namespace engine
