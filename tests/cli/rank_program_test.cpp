// meshinfer-node, the program each machine of a real run starts: it links no
// simulator, so a rank cannot choose an "auto" plan; the launch chooses it
// once and hands it on. Nor does meshinfer, which starts a launch.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/cli_runner.hpp"
#include "support/real_run.hpp"

namespace {

const std::string kRankProgram = (std::filesystem::path(MESHINFER_BINARY).parent_path() / "meshinfer-node").string();

TEST(RankProgram, LinksNoSimulator) {
  const auto r = testsupport::run_shell("readelf -d '" + kRankProgram + "' 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_NE(r.output.find("(NEEDED)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("simgrid"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("ns3"), std::string::npos) << r.output;
}

// meshinfer itself runs launch and node without the simulator (its start-up is a launch's), and hands every other
// command to meshinfer-sim beside it; alone, it says which program it could not run.
TEST(RankProgram, MeshinferLinksNoSimulatorAndHandsTheSimulatorsCommandsOn) {
  const auto linked = testsupport::run_shell(std::string("readelf -d '") + MESHINFER_BINARY + "' 2>&1");
  ASSERT_EQ(linked.exit_code, 0) << linked.output;
  EXPECT_EQ(linked.output.find("simgrid"), std::string::npos) << linked.output;

  const std::string dir = testsupport::fresh_dir("front-program");
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("front", 2, 1, 2));
  const auto validated = testsupport::run_cli("validate " + scenario);
  EXPECT_EQ(validated.exit_code, 0) << validated.output;
  EXPECT_NE(validated.output.find("tensor"), std::string::npos) << validated.output;

  std::filesystem::copy_file(MESHINFER_BINARY, dir + "/meshinfer");
  const auto alone = testsupport::run_shell(dir + "/meshinfer validate " + scenario + " 2>&1");
  EXPECT_EQ(alone.exit_code, 3) << alone.output;
  EXPECT_NE(alone.output.find("cannot run " + dir + "/meshinfer-sim"), std::string::npos) << alone.output;
}

TEST(RankProgram, AnAutoScenarioNeedsTheParallelismTheLaunchChose) {
  const std::string dir = testsupport::fresh_dir("rank-auto");
  auto s = testsupport::small_scenario("rank-auto", 2, 1, 2);
  s["parallelism"] = "auto";
  const std::string scenario = testsupport::write_json(dir, "s", s);
  const std::string cluster = testsupport::write_json(
      dir, "hosts", {{{"ssh", "localhost"}, {"ips", {"127.0.0.1"}}}, {{"ssh", "localhost"}, {"ips", {"127.0.0.1"}}}});

  const auto alone = testsupport::run_shell(kRankProgram + " --rank 1 --cluster " + cluster + " " + scenario + " 2>&1");
  EXPECT_EQ(alone.exit_code, 2) << alone.output;
  EXPECT_NE(alone.output.find("/parallelism"), std::string::npos) << alone.output;
  EXPECT_NE(alone.output.find("launch does"), std::string::npos) << alone.output;

  s["parallelism"] = "tensor";  // a rank told otherwise than its scenario refuses
  const auto told = testsupport::run_shell(kRankProgram + " --rank 1 --cluster " + cluster + " " +
                                           testsupport::write_json(dir, "tensor", s) + " --parallelism pipeline 2>&1");
  EXPECT_EQ(told.exit_code, 2) << told.output;
  EXPECT_NE(told.output.find("says tensor, but this rank was told to run pipeline"), std::string::npos) << told.output;

  const auto launched = testsupport::run_cli("launch --local 2 " + scenario + " --out " + dir + "/out --timeout 60");
  EXPECT_EQ(launched.exit_code, 0) << launched.output;
  EXPECT_NE(launched.output.find("launch: outcome"), std::string::npos) << launched.output;
}

}  // namespace
