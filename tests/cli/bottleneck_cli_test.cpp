// Why not faster, as a user asks it: `run` and `plan` say where a token's time
// goes and what each added node buys.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"

namespace {

using testsupport::read_file;
using testsupport::run_cli;

const std::string kScenarios = std::string(MESHINFER_SOURCE_DIR) + "/scenarios";

TEST(WhyNotFaster, RunSplitsADecodeTokenAndScalesTheClusterDown) {
  const std::string out = testsupport::fresh_dir("why-run");
  const auto r = run_cli("run --quiet " + kScenarios + "/default.json --requests 1 --output-tokens 16 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("one decode token on "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  2 nodes: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("held back by dispatch"), std::string::npos) << r.output;
  const std::string md = read_file(out + "/report.md");
  EXPECT_NE(md.find("## Where a token's time goes"), std::string::npos);
  EXPECT_NE(md.find("### Scaling: 1, 2, 4 nodes"), std::string::npos);
  const auto report = nlohmann::json::parse(read_file(out + "/report.json"));
  EXPECT_EQ(report["bottleneck"]["scaling"]["points"].size(), 3u);
  EXPECT_NE(read_file(out + "/report.html").find("id=\"scaling\""), std::string::npos);

  const auto bare =
      run_cli("run --quiet --no-scaling " + kScenarios + "/default.json --requests 1 --output-tokens 16 --out " + out);
  ASSERT_EQ(bare.exit_code, 0) << bare.output;
  EXPECT_EQ(bare.output.find("held back by"), std::string::npos) << bare.output;
  EXPECT_FALSE(nlohmann::json::parse(read_file(out + "/report.json"))["bottleneck"].contains("scaling"));
}

TEST(WhyNotFaster, PlanShowsWhatEachNodeBuys) {
  const std::string out = testsupport::fresh_dir("why-plan");
  const auto r = run_cli(
      "plan --model qwen3-235b-a22b --quant 8bit --hardware m3-ultra-512gb --max-nodes 2 --links tb5-rdma "
      "--strategies tensor --out " +
      out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("scaling (tensor plan, "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  2 nodes: "), std::string::npos) << r.output;
  EXPECT_NE(read_file(out + "/plan.md").find("## What each node buys: qwen3-235b-a22b on m3-ultra-512gb, tb5-rdma"),
            std::string::npos);
}

}  // namespace
