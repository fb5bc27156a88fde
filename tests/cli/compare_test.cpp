// meshinfer compare as CI uses it: exit 0 when two runs agree, 1 with the
// differing rows, 2 when a file is not a report.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"

namespace {

using testing::HasSubstr;

const std::string kScenario = std::string(MESHINFER_SOURCE_DIR) + "/scenarios/ci/node-crash-replan.json";

std::string simulate(const std::string& name) {
  const std::string out = testsupport::fresh_dir(name);
  const auto r = testsupport::run_cli("run --quiet " + kScenario + " --out " + out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return out + "/report.json";
}

TEST(CompareCommand, TwoRunsOfOneScenarioAgreeAndExitZero) {
  const auto r = testsupport::run_cli("compare " + simulate("compare-a") + " " + simulate("compare-b"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the runs agree"));
  EXPECT_THAT(r.output, HasSubstr("| decision 1 |"));
}

TEST(CompareCommand, ARunWhoseRequestFailedExitsOneShowingTheRow) {
  const std::string a = simulate("compare-ok"), b = simulate("compare-failed");
  auto report = nlohmann::json::parse(testsupport::read_file(b));
  report["requests"][0]["status"] = "failed";
  std::ofstream(b) << report.dump();
  const auto r = testsupport::run_cli("compare " + a + " " + b);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("| request 0 | completed"));
  EXPECT_THAT(r.output, HasSubstr("DIFFERS"));
}

TEST(CompareCommand, AFileThatIsNotAReportExitsTwoNamingIt) {
  const std::string other = testsupport::fresh_dir("compare-bad") + "/not-a-report.json";
  std::ofstream(other) << R"({"schema": "something/else"})";
  const auto r = testsupport::run_cli("compare " + simulate("compare-good") + " " + other);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(other));
  EXPECT_THAT(r.output, HasSubstr("/schema"));
}

}  // namespace
