// JUnit XML from hand-made expectation and invariant results: the counts a CI
// system totals, the failure line it shows, and text that would break the XML.
#include "engine/report/junit.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/report/markup.hpp"

namespace engine {
namespace {

using testing::HasSubstr;
using testing::Not;

Scenario scenario() {
  Scenario s;
  s.file = "ci/<breach> & 'co'.json";
  s.name = "breach";
  return s;
}

JunitSuite suite_with_one_breach() {
  const Scenario s = scenario();
  const std::vector<ExpectationResult> expectations = {
      {{"decode_tokens_per_s", "min", 25, "/expect/decode_tokens_per_s/min"}, 18.25, false, s.file},
      {{"failed_requests", "eq", 0, "/expect/failed_requests/eq"}, 0, true, s.file}};
  const std::vector<InvariantCheck> invariants = {
      {"the run ends by its deadline", {}},
      {"token times never go backwards", {"request 3: went back", "request 4: too"}}};
  return run_junit_suite(s, 7, expectations, invariants);
}

TEST(Junit, EachExpectationAndInvariantIsATestCaseAndTheTotalsCountTheFailures) {
  const std::string xml = render_junit("meshinfer run breach", {suite_with_one_breach()});
  EXPECT_THAT(xml, HasSubstr("<testsuites name=\"meshinfer run breach\" tests=\"4\" failures=\"2\" errors=\"0\">"));
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"breach\" tests=\"4\" failures=\"2\" errors=\"0\" skipped=\"0\">"));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"breach.expect\" name=\"failed_requests == 0\"/>"));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"breach.invariants\" name=\"the run ends by its deadline\"/>"));
  EXPECT_THAT(xml, HasSubstr("<property name=\"seed\" value=\"7\"/>"));
}

TEST(Junit, AFailedExpectationNamesTheMetricTheValueAndTheBound) {
  const std::string xml = render_junit("r", {suite_with_one_breach()});
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"breach.expect\" name=\"decode_tokens_per_s &gt;= 25\">"));
  EXPECT_THAT(xml, HasSubstr("message=\"expectation failed: decode_tokens_per_s = 18.25, must be &gt;= 25 "
                             "(ci/&lt;breach&gt; &amp; &#39;co&#39;.json /expect/decode_tokens_per_s/min)\""));
}

TEST(Junit, AViolatedInvariantShowsItsFirstViolationAndCountsTheRest) {
  const std::string xml = render_junit("r", {suite_with_one_breach()});
  EXPECT_THAT(xml, HasSubstr("message=\"invariant violated: request 3: went back (and 1 more)\""));
  EXPECT_THAT(xml, HasSubstr(">request 3: went back\nrequest 4: too\n</failure>"));
}

TEST(Junit, MarkupAndControlCharactersCannotBreakTheFile) {
  EXPECT_EQ(escape_markup("a<b>&\"c\"'d'"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  EXPECT_EQ(escape_markup("tab\tline\nbell\x07"), "tab\tline\nbell\xEF\xBF\xBD");
  EXPECT_THAT(render_junit("a]]>b", {}), Not(HasSubstr("]]>")));
}

TEST(Junit, ASuiteWhoseRunDiedIsOneErrorNotItsCases) {
  JunitSuite dead = suite_with_one_breach();
  dead.errored = true;
  dead.error = "the simulation died: boom";
  const std::string xml = render_junit("c", {dead, suite_with_one_breach()});
  EXPECT_THAT(xml, HasSubstr("<testsuites name=\"c\" tests=\"5\" failures=\"2\" errors=\"1\">"));
  EXPECT_THAT(xml, HasSubstr("<error message=\"the simulation died: boom\" type=\"crash\"/>"));
}

}  // namespace
}  // namespace engine
