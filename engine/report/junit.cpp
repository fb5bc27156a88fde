#include "engine/report/junit.hpp"

#include <fmt/format.h>

#include "engine/report/markup.hpp"

namespace engine {

namespace {

int failures(const JunitSuite& s) {
  int n = 0;
  for (const auto& c : s.cases) n += c.failed;
  return n;
}

}  // namespace

void add_invariant_cases(const std::string& classname, const std::vector<InvariantCheck>& invariants,
                         JunitSuite& suite) {
  for (const auto& inv : invariants) {
    JunitCase c{classname, inv.name, !inv.violations.empty(), "", ""};
    if (c.failed) {
      c.message = fmt::format("invariant violated: {}", inv.violations.front());
      if (inv.violations.size() > 1) c.message += fmt::format(" (and {} more)", inv.violations.size() - 1);
      c.details = fmt::format("{}\n", fmt::join(inv.violations, "\n"));
    }
    suite.cases.push_back(std::move(c));
  }
}

std::string render_junit(const std::string& name, const std::vector<JunitSuite>& suites) {
  int tests = 0, failed = 0, errors = 0;
  for (const auto& s : suites) {
    tests += s.errored ? 1 : static_cast<int>(s.cases.size());
    failed += s.errored ? 0 : failures(s);
    errors += s.errored;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n", escape_markup(name),
                     tests, failed, errors);
  for (const auto& s : suites) {
    out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\">\n",
                       escape_markup(s.name), s.errored ? 1 : s.cases.size(), s.errored ? 0 : failures(s),
                       s.errored ? 1 : 0);
    if (!s.properties.empty()) {
      out += "    <properties>\n";
      for (const auto& [key, value] : s.properties)
        out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", escape_markup(key), escape_markup(value));
      out += "    </properties>\n";
    }
    if (s.errored) {
      out += fmt::format("    <testcase classname=\"{0}\" name=\"the run completes\">\n", escape_markup(s.name));
      out += fmt::format("      <error message=\"{}\" type=\"crash\"/>\n    </testcase>\n", escape_markup(s.error));
    }
    for (const auto& c : s.errored ? std::vector<JunitCase>{} : s.cases) {
      const std::string head =
          fmt::format("    <testcase classname=\"{}\" name=\"{}\"", escape_markup(c.classname), escape_markup(c.name));
      if (!c.failed) {
        out += head + "/>\n";
        continue;
      }
      out += head + ">\n";
      out += fmt::format("      <failure message=\"{}\" type=\"breach\">{}</failure>\n", escape_markup(c.message),
                         escape_markup(c.details));
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  return out + "</testsuites>\n";
}

JunitSuite run_junit_suite(const Scenario& s, unsigned long long seed,
                           const std::vector<ExpectationResult>& expectations,
                           const std::vector<InvariantCheck>& invariants) {
  JunitSuite suite{s.name, {{"scenario", s.file}, {"seed", std::to_string(seed)}}, {}, false, ""};
  for (const auto& r : expectations) {
    JunitCase c{s.name + ".expect", fmt::format("{} {} {:g}", r.e.metric, op_symbol(r.e.op), r.e.bound), !r.pass, "",
                ""};
    if (c.failed) {
      c.message = describe_breach(r);
      c.details = fmt::format("{} = {}\nbound: {} {:g}\nat: {} {}\n", r.e.metric, value_text(r.value), op_symbol(r.e.op),
                              r.e.bound, r.file, r.e.json_path);
    }
    suite.cases.push_back(std::move(c));
  }
  add_invariant_cases(s.name + ".invariants", invariants, suite);
  return suite;
}

}  // namespace engine
