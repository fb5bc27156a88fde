// `run --junit` and `chaos --junit` as a CI job uses them: the file is valid
// against the JUnit layout CI systems parse (tests/junit/junit.xsd, checked by
// xmllint), and says which expectation failed with its value and bound.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"

namespace {

using testing::HasSubstr;
using testsupport::read_file;
using testsupport::run_cli;
using testsupport::run_shell;

const std::string kSource = MESHINFER_SOURCE_DIR;

// xmllint's verdict on `file` against the JUnit schema; exit 0 when it validates.
testsupport::CliResult validate(const std::string& file) {
  return run_shell("xmllint --noout --schema '" + kSource + "/tests/junit/junit.xsd' '" + file + "' 2>&1");
}

// The replan CI scenario with a bound no cluster meets, in a directory whose
// name needs escaping in XML.
std::string breached_scenario(const std::string& dir) {
  auto j = nlohmann::json::parse(read_file(kSource + "/scenarios/ci/node-crash-replan.json"));
  j.erase("$schema");
  j["expect"]["decode_tokens_per_s"] = {{"min", 1e6}};
  const std::string path = dir + "/breach.json";
  std::ofstream(path) << j.dump(2);
  return path;
}

TEST(JunitCli, ABreachedRunWritesValidJunitNamingMetricValueAndBound) {
  const std::string dir = testsupport::fresh_dir("junit-run <&>");
  const std::string scenario = breached_scenario(dir);
  const auto r = run_cli("run --quiet '" + scenario + "' --out '" + dir + "/out' --junit '" + dir + "/junit.xml'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto check = validate(dir + "/junit.xml");
  EXPECT_EQ(check.exit_code, 0) << check.output;
  const std::string xml = read_file(dir + "/junit.xml");
  // failed_requests == 0, recovery_s <= 30, decode_tokens_per_s >= 1e6, and three invariants.
  EXPECT_THAT(xml, HasSubstr("tests=\"6\" failures=\"1\" errors=\"0\""));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"ci-node-crash-replan.expect\" name=\"decode_tokens_per_s &gt;= "
                             "1e+06\">\n      <failure message=\"expectation failed: decode_tokens_per_s = "));
  EXPECT_THAT(xml, HasSubstr("junit-run &lt;&amp;&gt;/breach.json /expect/decode_tokens_per_s/min)\""));
}

TEST(JunitCli, AChaosCampaignWritesOneSuitePerSeedWithEveryInvariant) {
  const std::string dir = testsupport::fresh_dir("junit-chaos");
  const auto r = run_cli("chaos " + kSource +
                         "/scenarios/ci/node-crash-replan.json --seeds 3..5 --requests 2 --output-tokens 8 --jobs 2 "
                         "--junit " +
                         dir + "/junit.xml");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto check = validate(dir + "/junit.xml");
  EXPECT_EQ(check.exit_code, 0) << check.output;
  const std::string xml = read_file(dir + "/junit.xml");
  EXPECT_THAT(xml, HasSubstr("<testsuites name=\"meshinfer chaos ci-node-crash-replan\" tests=\"9\" failures=\"0\""));
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"ci-node-crash-replan seed 4\" tests=\"3\""));
  EXPECT_THAT(xml, HasSubstr("<property name=\"faults\" value=\"[{&quot;"));
  EXPECT_THAT(xml,
              HasSubstr("classname=\"chaos.ci-node-crash-replan.seed-5\" name=\"the run ends by its deadline\"/>"));
}

TEST(JunitCli, AnUnwritableJunitPathFailsTheRun) {
  const std::string dir = testsupport::fresh_dir("junit-unwritable");
  std::ofstream(dir + "/file") << "x";
  const auto r = run_cli("run --quiet " + kSource + "/scenarios/ci/node-crash-replan.json --out " + dir +
                         "/out --junit " + dir + "/file/junit.xml");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(dir + "/file/junit.xml"));
}

}  // namespace
