// Real processes over the rdma transport on softrdma (rdma_lo), as a user
// rehearses an RDMA cluster on Linux: `launch --local 4 --rdma-device rdma_lo`
// runs a scenario to one report, kill -9 of a rank is recovered from as over
// TCP, macOS's RDMA stack failure is handled by the scenario's policy, and
// `probe` over rdma writes a link card.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
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

// Waits until every rank of `launch` has joined, then lets it decode a while.
void wait_until_decoding(ChildProcess& launch, int world) {
  for (int r = 0; r < world; ++r)
    ASSERT_NE(launch.wait_for_line("[rank " + std::to_string(r) + "] rank " + std::to_string(r) + ": joined", 60), "")
        << launch.output();
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
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
  // Four ranks on fewer cores wait on each other: the launcher says so.
  EXPECT_EQ(launch.output().find("4 ranks share this machine's") != std::string::npos,
            std::thread::hardware_concurrency() < 4)
      << launch.output();
}

// As KillNine over TCP (tests/cli/launch_test.cpp): a rank killed mid-decode
// is detected, the model re-placed on the survivors, and no request lost.
TEST(LaunchOverRdma, KillNineOfARankIsRecoveredFromAsOverTcp) {
  const int victim = 2, world = 4;
  const std::string dir = testsupport::fresh_dir("rdma-kill");
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("rdma-kill", 4, 2, 60));
  ChildProcess launch(launch_argv(scenario, dir + "/out"));
  wait_until_decoding(launch, world);
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

// The report of 4 ranks over rdma on softrdma, the scenario's rdma-stack-failure
// carried out mid-decode by the launcher (softrdma's failure switch: every
// queue pair of every rank fails, the device is hidden), under `policy`; the
// launch exits 1 when requests failed (the scenario does not say any may).
json report_after_stack_failure(const std::string& name, const std::string& policy, int status) {
  const std::string dir = testsupport::fresh_dir(name);
  json s = testsupport::small_scenario(name, 4, 2, 60, policy, "tb5-rdma");
  s["cluster"]["fabric"]["secondary_link"] = "10gbe";
  s["faults"] = json::array({{{"at_s", 0.5}, {"kind", "rdma-stack-failure"}}});
  ChildProcess launch(launch_argv(testsupport::write_json(dir, "s", s), dir + "/out"));
  EXPECT_EQ(launch.wait(120), status) << launch.output();
  EXPECT_NE(launch.output().find("launch: applying rdma-stack-failure"), std::string::npos) << launch.output();
  const json report = json::parse(testsupport::read_file(dir + "/out/report.json"));
  EXPECT_EQ(report["faults"]["injected"], 1) << report["faults"].dump(2);
  return report;
}

std::string event_details(const json& report, const std::string& kind) {
  std::string details;
  for (const auto& e : report["events"])
    if (e["kind"] == kind) details += e["detail"].get<std::string>() + "\n";
  return details;
}

TEST(LaunchOverRdma, TheStackFailureUnderFallbackMovesTheRunToTheSecondaryNetworkLosingNoRequest) {
  const json report = report_after_stack_failure("rdma-fallback", "fallback", 0);
  EXPECT_NE(event_details(report, "detected"), "") << report["events"].dump(2);
  EXPECT_NE(event_details(report, "recovered").find("moved to the secondary network (10gbe)"), std::string::npos)
      << report["events"].dump(2);
  EXPECT_EQ(report["summary"]["requests"]["completed"], 2) << report["events"].dump(2);
  EXPECT_EQ(report["summary"]["requests"]["failed"], 0);
  EXPECT_EQ(report["summary"]["output_tokens"], 120);
  for (const auto& n : report["nodes"]) EXPECT_EQ(n["error"], "") << n.dump();
}

// The twin: the same failure under fail-stop ends the instance, its requests
// failed with the reason, so the run above was saved by the policy.
TEST(LaunchOverRdma, TheStackFailureUnderFailStopFailsTheRequestsSayingWhy) {
  const json report = report_after_stack_failure("rdma-fail-stop", "fail-stop", 1);
  EXPECT_NE(event_details(report, "instance-failed").find("policy is fail-stop"), std::string::npos)
      << report["events"].dump(2);
  EXPECT_EQ(report["summary"]["requests"]["failed"], 2) << report["events"].dump(2);
}

// A scenario's rdma-packet-loss on every cable (all ranks share rdma_lo),
// applied by the launcher at its time: the transport resends nothing, so a
// frame lost ends a link, and under fail-stop the instance fails its requests.
TEST(LaunchOverRdma, PacketLossFromTheScenarioEndsALinkAndThePolicyTakesOver) {
  const std::string dir = testsupport::fresh_dir("rdma-loss");
  json s = testsupport::small_scenario("rdma-loss", 4, 2, 60, "fail-stop", "tb5-rdma");
  s["faults"] = json::array({{{"at_s", 0.5}, {"kind", "rdma-packet-loss"}, {"loss", 0.2}}});
  ChildProcess launch(launch_argv(testsupport::write_json(dir, "s", s), dir + "/out"));
  EXPECT_EQ(launch.wait(120), 1) << "requests failed, and the scenario does not say any may\n" << launch.output();
  EXPECT_NE(launch.output().find("requests failed (the first: "), std::string::npos) << launch.output();
  EXPECT_NE(launch.output().find("launch: applying rdma-packet-loss"), std::string::npos) << launch.output();
  const json report = json::parse(testsupport::read_file(dir + "/out/report.json"));
  EXPECT_EQ(report["faults"]["injected"], 1) << report["faults"].dump(2);
  EXPECT_NE(event_details(report, "rdma-packet-loss")
                .find("softrdma loses 20% and reorders 0% of the packets on "
                      "every RDMA cable"),
            std::string::npos)
      << report["events"].dump(2);
  EXPECT_TRUE(report["faults"]["time_to_detect_s"].is_number()) << report["faults"].dump(2);
  EXPECT_NE(event_details(report, "instance-failed").find("policy is fail-stop"), std::string::npos)
      << report["events"].dump(2);
  EXPECT_EQ(report["summary"]["requests"]["failed"], 2) << report["events"].dump(2);
  std::printf("detected %s s after the loss began: %s", report["faults"]["time_to_detect_s"].dump().c_str(),
              event_details(report, "detected").c_str());
}

// Refused before a rank starts, with the scenario's path: where no softrdma
// drops packets (TCP), and a cable named where one device carries them all.
TEST(LaunchOverRdma, PacketLossIsRefusedWhereSoftrdmaCannotCarryItOut) {
  const std::string dir = testsupport::fresh_dir("rdma-loss-refused");
  json s = testsupport::small_scenario("rdma-loss-refused", 4, 1, 8, "fail-stop", "tb5-rdma");
  s["faults"] = json::array({{{"at_s", 0.5}, {"kind", "rdma-packet-loss"}, {"loss", 0.2}}});
  const std::string untargeted = testsupport::write_json(dir, "untargeted", s);
  const auto tcp = testsupport::run_cli("launch --local 4 " + untargeted + " --out " + dir + "/tcp");
  EXPECT_NE(tcp.exit_code, 0);
  EXPECT_NE(tcp.output.find(untargeted + ": /faults/0/kind: rdma-packet-loss: only softrdma"), std::string::npos)
      << tcp.output;
  s["faults"][0]["target"] = "m1-m2";
  const std::string targeted = testsupport::write_json(dir, "targeted", s);
  ChildProcess rdma(launch_argv(targeted, dir + "/rdma"));
  EXPECT_NE(rdma.wait(60), 0);
  EXPECT_NE(rdma.output().find(targeted + ": /faults/0/target: rdma-packet-loss: every rank's device here is rdma_lo"),
            std::string::npos)
      << rdma.output();
}

TEST(LaunchOverRdma, ProbeOverRdmaWritesALinkCard) {
  const std::string dir = testsupport::fresh_dir("rdma-probe");
  const std::string cluster = dir + "/cluster.json";
  std::ofstream(cluster) << hw::local_cluster_json(2, hw::free_port_pair(), "rdma_lo");
  ChildProcess probe(preloaded({}, {MESHINFER_BINARY, "probe", "--cluster", cluster, "--out", dir, "--name", "rdma-lo",
                                    "--pings", "50", "--bytes", "1048576", "--repeats", "2", "--timeout", "90"}));
  ASSERT_EQ(probe.wait(120), 0) << probe.output();
  const json card = json::parse(testsupport::read_file(dir + "/rdma-lo.json"));
  EXPECT_EQ(card["name"], "rdma-lo") << card.dump(2);
  EXPECT_EQ(card["frame_bytes"], 4096) << card.dump(2);  // the verbs stride, not Ethernet's 1500
  EXPECT_NE(probe.output().find("0-1"), std::string::npos) << probe.output();
}

}  // namespace
}  // namespace softrdma_test
