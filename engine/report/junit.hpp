// JUnit XML, the test-result file CI systems (GitHub Actions, GitLab, Jenkins)
// read: one <testsuite> per run or chaos seed, one <testcase> per expectation
// and per invariant, a <failure> naming the metric, the value and the bound.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/input/scenario.hpp"
#include "engine/node/invariants.hpp"
#include "engine/report/expectations.hpp"

namespace engine {

struct JunitCase {
  std::string classname, name;
  bool failed = false;
  std::string message;  // the failure's one line; CI systems show it next to the name
  std::string details;  // the failure's body
};

struct JunitSuite {
  std::string name;
  std::vector<std::pair<std::string, std::string>> properties;
  std::vector<JunitCase> cases;
  bool errored = false;  // the run itself died: one <error> instead of the cases
  std::string error;
};

// A whole JUnit file: <testsuites name=...> around `suites`, with the totals.
std::string render_junit(const std::string& name, const std::vector<JunitSuite>& suites);

// Each invariant a test case of `suite` under `classname`; a failed one lists every violation.
void add_invariant_cases(const std::string& classname, const std::vector<InvariantCheck>& invariants,
                         JunitSuite& suite);

// One run of `s`: each expectation and each invariant a test case.
JunitSuite run_junit_suite(const Scenario& s, unsigned long long seed,
                           const std::vector<ExpectationResult>& expectations,
                           const std::vector<InvariantCheck>& invariants);

}  // namespace engine
