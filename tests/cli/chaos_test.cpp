// Chaos campaigns as CI runs them: random fault schedules reproducible from
// the seed alone, and not one invariant violated.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"

namespace {

using testsupport::read_file;
using testsupport::run_cli;

const std::string kScenarios = std::string(MESHINFER_SOURCE_DIR) + "/scenarios/";

TEST(Chaos, ThreeHundredSeedsOnTheDefaultScenarioViolateNoInvariant) {
  const std::string out = testsupport::fresh_dir("chaos-campaign") + "/campaign.json";
  const auto r =
      run_cli("chaos " + kScenarios + "default.json --seeds 1..300 --requests 2 --output-tokens 16 --out " + out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto campaign = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(campaign["seeds_run"], 300);
  EXPECT_TRUE(campaign["violations"].empty()) << campaign["violations"].dump();
  // Under fail-stop, faults do fail requests, each with its cause.
  EXPECT_FALSE(campaign["failed_by_cause"].empty());
}

TEST(Chaos, ASeedReplaysExactlyAndRecoversUnderReplan) {
  const std::string dir = testsupport::fresh_dir("chaos-replay");
  const std::string args = "chaos " + kScenarios + "ci/node-crash-replan.json --requests 2 --output-tokens 16 ";
  const auto campaign = run_cli(args + "--seeds 1..12 --jobs 2 --out " + dir + "/campaign.json");
  ASSERT_EQ(campaign.exit_code, 0) << campaign.output;
  const auto all = nlohmann::json::parse(read_file(dir + "/campaign.json"));
  EXPECT_GT(all["recoveries"].get<int>(), 0);
  // Seed 7 alone, twice: the same faults, events and figures as inside the campaign.
  ASSERT_EQ(run_cli(args + "--seeds 7..7 --jobs 1 --out " + dir + "/a.json").exit_code, 0);
  ASSERT_EQ(run_cli(args + "--seeds 7..7 --jobs 1 --out " + dir + "/b.json").exit_code, 0);
  const auto a = nlohmann::json::parse(read_file(dir + "/a.json")),
             b = nlohmann::json::parse(read_file(dir + "/b.json"));
  EXPECT_EQ(a["runs"][0], b["runs"][0]);
  EXPECT_EQ(a["runs"][0], all["runs"][6]);
  EXPECT_FALSE(a["runs"][0]["events"].empty());
}

TEST(Chaos, BadSeedRangeIsRefused) {
  const auto r = run_cli("chaos " + kScenarios + "default.json --seeds 9..3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--seeds"), std::string::npos) << r.output;
}

}  // namespace
