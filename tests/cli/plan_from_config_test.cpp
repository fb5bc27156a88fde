// meshinfer plan --model PATH: a publisher's config.json plans as its catalog card does.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/cli_runner.hpp"

namespace {

using testsupport::read_file;
using testsupport::run_cli;

const std::string kSweep = " --hardware m3-ultra-512gb --max-nodes 2 --links tb5-rdma --strategies pipeline --jobs 1";

TEST(PlanFromConfig, APublishersConfigPlansByteForByteAsTheCatalogCard) {
  const std::string a = testsupport::fresh_dir("plan-config"), b = testsupport::fresh_dir("plan-card");
  const auto from_config = run_cli(
      "plan --model " MESHINFER_SOURCE_DIR "/tests/data/configs/qwen3-235b-a22b/config.json" + kSweep + " --out " + a);
  const auto from_card = run_cli("plan --model qwen3-235b-a22b --quant bf16" + kSweep + " --out " + b);
  ASSERT_EQ(from_config.exit_code, 0) << from_config.output;
  ASSERT_EQ(from_card.exit_code, 0) << from_card.output;
  EXPECT_EQ(read_file(a + "/plan.json"), read_file(b + "/plan.json"));
}

TEST(PlanFromConfig, AnMlaConfigPlansInItsOwnQuantization) {
  const std::string out = testsupport::fresh_dir("plan-config-mla");
  const auto r =
      run_cli("plan --model " MESHINFER_SOURCE_DIR "/tests/data/configs/kimi-k2-thinking" + kSweep + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto plan = nlohmann::json::parse(read_file(out + "/plan.json"));
  EXPECT_EQ(plan["query"]["model"], "kimi-k2-thinking");
  EXPECT_EQ(plan["query"]["quant"], "int4");
  EXPECT_EQ(plan["candidates"][1]["status"], "simulated") << plan["candidates"][1].dump();
}

TEST(PlanFromConfig, ABadConfigExitsTwoNamingFileAndKey) {
  const std::string dir = testsupport::fresh_dir("plan-config-bad");
  const auto r = run_cli("plan --model " + dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(dir + "/config.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cannot open"), std::string::npos) << r.output;
}

}  // namespace
