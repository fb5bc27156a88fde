// Real processes over the rdma transport on softrdma (rdma_lo), as a user
// rehearses an RDMA cluster on Linux: `launch --local 4 --rdma-device rdma_lo`
// runs a scenario to one report, kill -9 of a rank is recovered from as over
// TCP, and `probe` over rdma writes a link card.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "hw/cluster.hpp"
#include "hw/socket_util.hpp"
#include "softrdma_fixture.hpp"
#include "support/child_process.hpp"
#include "support/cli_runner.hpp"
#include "support/real_run.hpp"

namespace softrdma_test {
namespace {

using nlohmann::json;
using testsupport::ChildProcess;

std::vector<std::string> launch_argv(const std::string& scenario, const std::string& out) {
  return preloaded({}, {MESHINFER_BINARY, "launch", "--local", "4", "--rdma-device", "rdma_lo", scenario, "--out", out,
                        "--timeout", "90"});
}

TEST(LaunchOverRdma, FourLocalRanksRunTheScenarioToOneReport) {
  const std::string dir = testsupport::fresh_dir("rdma-launch");
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("rdma-local", 4, 2, 8));
  ChildProcess launch(launch_argv(scenario, dir + "/out"));
  ASSERT_EQ(launch.wait(120), 0) << launch.output();
  EXPECT_NE(testsupport::read_file(dir + "/out/cluster.json").find("\"transport\": \"rdma\""), std::string::npos);
  const json report = json::parse(testsupport::read_file(dir + "/out/report.json"));
  EXPECT_EQ(report["summary"]["requests"]["completed"], 2);
  EXPECT_EQ(report["summary"]["output_tokens"], 16);
  for (const auto& n : report["nodes"]) EXPECT_EQ(n["error"], "") << n.dump();
}

// As KillNine over TCP (tests/cli/launch_test.cpp): a rank killed mid-decode
// is detected, the model re-placed on the survivors, and no request lost.
TEST(LaunchOverRdma, KillNineOfARankIsRecoveredFromAsOverTcp) {
  const int victim = 2, world = 4;
  const std::string dir = testsupport::fresh_dir("rdma-kill");
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("rdma-kill", 4, 2, 60));
  ChildProcess launch(launch_argv(scenario, dir + "/out"));
  for (int r = 0; r < world; ++r)
    ASSERT_NE(launch.wait_for_line("[rank " + std::to_string(r) + "] rank " + std::to_string(r) + ": joined", 60), "")
        << launch.output();
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const auto pids = testsupport::rank_pids(launch.output(), world);
  ASSERT_GT(pids[victim], 0) << launch.output();
  ASSERT_EQ(::kill(pids[victim], SIGKILL), 0);
  ASSERT_EQ(launch.wait(120), 0) << launch.output();
  for (int r = 0; r < world; ++r) EXPECT_TRUE(testsupport::process_gone(pids[r])) << "rank " << r << " left behind";
  const json report = json::parse(testsupport::read_file(dir + "/out/report.json"));
  EXPECT_NE(report["nodes"][victim]["error"], "");
  bool detected = false;
  for (const auto& e : report["events"]) detected |= e["kind"] == "detected";
  EXPECT_TRUE(detected) << report["events"].dump(2);
  EXPECT_EQ(report["summary"]["requests"]["completed"], 2) << report["events"].dump(2);
  EXPECT_EQ(report["summary"]["requests"]["failed"], 0);
}

TEST(LaunchOverRdma, ProbeOverRdmaWritesALinkCard) {
  const std::string dir = testsupport::fresh_dir("rdma-probe");
  const std::string cluster = dir + "/cluster.json";
  std::ofstream(cluster) << hw::local_cluster_json(2, hw::free_port_pair(), "rdma_lo");
  ChildProcess probe(preloaded({}, {MESHINFER_BINARY, "probe", "--cluster", cluster, "--out", dir + "/rdma-lo.json",
                                    "--pings", "50", "--bytes", "1048576", "--repeats", "2", "--timeout", "90"}));
  ASSERT_EQ(probe.wait(120), 0) << probe.output();
  const json card = json::parse(testsupport::read_file(dir + "/rdma-lo.json"));
  EXPECT_EQ(card["name"], "rdma-lo") << card.dump(2);
  EXPECT_EQ(card["frame_bytes"], 4096) << card.dump(2);  // the verbs stride, not Ethernet's 1500
  EXPECT_NE(probe.output().find("0-1"), std::string::npos) << probe.output();
}

}  // namespace
}  // namespace softrdma_test
