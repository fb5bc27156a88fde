// Studies spread over machines: shards run with --shard, a launcher's
// environment or mpirun, and `meshinfer merge` gives a single run's bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "support/cli_runner.hpp"
#include "support/skip.hpp"

namespace {

using testsupport::read_file;
using testsupport::run_cli;
using testsupport::run_shell;

const std::string kChaos = "chaos " + std::string(MESHINFER_SOURCE_DIR) +
                           "/scenarios/ci/node-crash-replan.json --seeds 1..5 --requests 2 --output-tokens 16 "
                           "--jobs 1 ";
const std::string kPlan =
    "plan --model qwen3-235b-a22b --quant 8bit --hardware m3-ultra-512gb --max-nodes 3 --links tb5-rdma "
    "--strategies tensor,pipeline --jobs 1 ";

TEST(Shard, TwoChaosShardsMergeIntoTheSingleRunsBytes) {
  const std::string dir = testsupport::fresh_dir("shard-chaos");
  const auto single = run_cli(kChaos + "--out " + dir + "/single");
  ASSERT_EQ(single.exit_code, 0) << single.output;
  for (const char* k : {"0/2", "1/2"}) {
    const auto shard = run_cli(kChaos + "--shard " + k + " --out " + dir + "/sharded");
    ASSERT_EQ(shard.exit_code, 0) << shard.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/sharded/campaign.json"));
  const auto merged = run_cli("merge " + dir + "/sharded/shard-1-of-2.json " + dir + "/sharded/shard-0-of-2.json");
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_EQ(merged.output, single.output);
  EXPECT_EQ(read_file(dir + "/sharded/campaign.json"), read_file(dir + "/single/campaign.json"));
}

TEST(Shard, PlanShardsFromTheCiMatrixVariableMergeIntoTheSingleRunsBytes) {
  const std::string dir = testsupport::fresh_dir("shard-plan");
  ASSERT_EQ(run_cli(kPlan + "--out " + dir + "/single").exit_code, 0);
  std::string files;
  for (int k = 0; k < 3; ++k) {
    const auto shard = run_shell("MESHINFER_SHARD=" + std::to_string(k) + "/3 " + MESHINFER_BINARY + " " + kPlan +
                                 "--out " + dir + "/sharded 2>&1");
    ASSERT_EQ(shard.exit_code, 0) << shard.output;
    files += " " + dir + "/sharded/shard-" + std::to_string(k) + "-of-3.json";
  }
  const auto merged = run_cli("merge" + files + " --out " + dir + "/merged");
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  for (const char* f : {"/plan.json", "/plan.md", "/plan.html"})
    EXPECT_TRUE(read_file(dir + "/merged" + f) == read_file(dir + "/single" + f)) << f;
}

TEST(Shard, MpirunSplitsAChaosCampaignWithoutAnMpiLibrary) {
  if (run_shell("command -v mpirun >/dev/null").exit_code != 0)  // scripts/install-deps installs openmpi-bin
    SKIP_UNLESS_CI_PROVIDES(true, "mpirun (openmpi-bin) not installed");
  const std::string dir = testsupport::fresh_dir("shard-mpirun");
  ASSERT_EQ(run_cli(kChaos + "--out " + dir + "/single").exit_code, 0);
  const std::string as_root = ::geteuid() == 0 ? "--allow-run-as-root " : "";
  const auto run = run_shell("mpirun --oversubscribe " + as_root + "-np 3 " + MESHINFER_BINARY + " " + kChaos +
                             "--out " + dir + "/sharded 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto merged = run_cli("merge " + dir + "/sharded/shard-0-of-3.json " + dir + "/sharded/shard-1-of-3.json " +
                              dir + "/sharded/shard-2-of-3.json");
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_EQ(read_file(dir + "/sharded/campaign.json"), read_file(dir + "/single/campaign.json"));
}

TEST(Shard, SlurmArrayIndicesCountFromTheArraysFirstIndex) {
  const std::string dir = testsupport::fresh_dir("shard-slurm");
  const auto r = run_shell("SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=2 " +
                           std::string(MESHINFER_BINARY) + " " + kChaos + "--out " + dir + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir + "/shard-1-of-2.json")) << r.output;
}

TEST(Shard, AMissingShardOrABadShardIsRefusedWithTheReason) {
  const std::string dir = testsupport::fresh_dir("shard-refused");
  ASSERT_EQ(run_cli(kChaos + "--shard 0/2 --out " + dir).exit_code, 0);
  const auto missing = run_cli("merge " + dir + "/shard-0-of-2.json");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("shard 1/2 is missing"), std::string::npos) << missing.output;
  const auto twice = run_cli("merge " + dir + "/shard-0-of-2.json " + dir + "/shard-0-of-2.json");
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.output.find("given twice"), std::string::npos) << twice.output;
  const auto bad = run_cli(kChaos + "--shard 2/2 --out " + dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--shard"), std::string::npos) << bad.output;
  const auto k8s = run_shell("JOB_COMPLETION_INDEX=1 " + std::string(MESHINFER_BINARY) + " " + kChaos + "2>&1");
  EXPECT_EQ(k8s.exit_code, 2);
  EXPECT_NE(k8s.output.find("MESHINFER_SHARD_COUNT"), std::string::npos) << k8s.output;
}

}  // namespace
