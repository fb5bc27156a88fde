// Strangers during bootstrap: connections that close early, send garbage, an
// oversized length or a replayed handshake, or stay silent, are dropped and
// named; the real ranks still form the cluster; a process without the
// cluster's secret never gets in; and a rank that cannot form the cluster
// ends with a clear error, not an abort.
#include "support/stranger.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "hw/cluster.hpp"
#include "hw/socket_util.hpp"
#include "support/child_process.hpp"
#include "support/cli_runner.hpp"
#include "support/real_run.hpp"

namespace {

using nlohmann::json;

constexpr char kSecret[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

std::string write_cluster(const std::string& dir, int world, int port, const std::string& secret = kSecret,
                          const std::string& name = "cluster") {
  const std::string path = dir + "/" + name + ".json";
  std::ofstream(path) << hw::local_cluster_json(world, port, "", secret);
  return path;
}

// An exec prefix that starts the last rank `seconds` late, so bootstrap stays open that long.
std::string late_last_rank(const std::string& dir, int world, int seconds) {
  const std::string path = dir + "/late.sh";
  std::ofstream(path) << "#!/bin/sh\n[ \"$1\" = " << world - 1 << " ] && sleep " << seconds << "\nshift\nexec \"$@\"\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path + " {rank}";
}

TEST(Strangers, KnockingOnEveryPortDuringBootstrapNeitherStopsTheClusterNorLosesARequest) {
  const int world = 4, requests = 4;
  const std::string dir = testsupport::fresh_dir("strangers");
  const std::string scenario =
      testsupport::write_json(dir, "s", testsupport::small_scenario("strangers", world, requests, 8));
  const int port = hw::free_port_pair();
  testsupport::ChildProcess launch({MESHINFER_BINARY, "launch", scenario, "--hostfile", write_cluster(dir, world, port),
                                    "--exec-prefix", late_last_rank(dir, world, 3), "--out", dir + "/out", "--timeout",
                                    "90"});
  ASSERT_NE(launch.wait_for_line("launch: rank " + std::to_string(world - 1) + " is pid", 30), "") << launch.output();
  const std::vector<pid_t> pids = testsupport::rank_pids(launch.output(), world);
  int status = -1;
  {
    testsupport::Stranger stranger(
        {port, port + 1}, [&] { return pids; }, kSecret);
    status = launch.wait(90);
    EXPECT_GT(stranger.connections(), 0);
  }
  ASSERT_EQ(status, 0) << launch.output();
  const json report = json::parse(testsupport::read_file(dir + "/out/report.json"));
  EXPECT_EQ(report["summary"]["requests"]["completed"], requests);
  EXPECT_EQ(report["summary"]["requests"]["failed"], 0);

  std::set<std::string> refusing_nodes;
  std::string details;
  for (const json& e : report["events"])
    if (e["kind"] == "refused") {
      refusing_nodes.insert(e["target"].get<std::string>());
      details += e["detail"].get<std::string>() + "\n";
    }
  EXPECT_TRUE(refusing_nodes.contains("m1")) << report["events"].dump(2);
  EXPECT_NE(details.find("on port " + std::to_string(port) + ": "), std::string::npos) << details;
  EXPECT_NE(details.find("closed after 3 of 144 handshake bytes"), std::string::npos) << details;
  EXPECT_NE(details.find("not a meshinfer handshake"), std::string::npos) << details;  // garbage, a 2^63 length
  EXPECT_NE(details.find("claims rank 1 without the cluster's secret (a wrong or replayed proof)"), std::string::npos)
      << details;
  EXPECT_TRUE(details.find("silent for") != std::string::npos ||
              details.find("still in its handshake") != std::string::npos)
      << details;
  if (std::filesystem::exists("/proc/net/tcp")) {  // the stranger found the ranks' own listening ports too
    EXPECT_TRUE(refusing_nodes.contains("m2") || refusing_nodes.contains("m3")) << details;
  }
  EXPECT_NE(launch.output().find("[rank 0] rank 0: refused 127.0.0.1:"), std::string::npos) << launch.output();
}

TEST(Strangers, RankZeroAloneWithStrangersWaitsItsTimeoutAndEndsWithAClearError) {
  const std::string dir = testsupport::fresh_dir("strangers-alone");
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("alone", 2, 1, 4));
  const int port = hw::free_port_pair();
  testsupport::ChildProcess node({MESHINFER_BINARY, "node", "--rank", "0", "--cluster", write_cluster(dir, 2, port),
                                  scenario, "--bootstrap-timeout", "3"});
  int status = -1;
  {
    testsupport::Stranger stranger({port}, [] { return std::vector<pid_t>{}; });
    status = node.wait(60);
  }
  EXPECT_EQ(status, 3) << node.output();
  EXPECT_NE(node.output().find("rank 0: refused 127.0.0.1:"), std::string::npos) << node.output();
  EXPECT_NE(node.output().find("error: timed out waiting for 1 more rank(s) to join"), std::string::npos)
      << node.output();
}

TEST(Strangers, ARankWithAnotherSecretIsRefusedAndNeverJoins) {
  const std::string dir = testsupport::fresh_dir("wrong-secret");
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("wrong-secret", 2, 1, 4));
  const int port = hw::free_port_pair();
  testsupport::ChildProcess zero({MESHINFER_BINARY, "node", "--rank", "0", "--cluster", write_cluster(dir, 2, port),
                                  scenario, "--bootstrap-timeout", "3"});
  const auto one =
      testsupport::run_cli("node --rank 1 --cluster " + write_cluster(dir, 2, port, std::string(64, 'f'), "other") +
                           " " + scenario + " --bootstrap-timeout 3");
  EXPECT_EQ(zero.wait(60), 3) << zero.output();
  EXPECT_NE(zero.output().find("claims rank 1 without the cluster's secret"), std::string::npos) << zero.output();
  EXPECT_NE(zero.output().find("error: timed out waiting for 1 more rank(s) to join"), std::string::npos)
      << zero.output();
  EXPECT_EQ(one.exit_code, 3) << one.output;
}

TEST(Strangers, RankThatCannotReachRankZeroEndsWithAClearErrorNotAnAbort) {
  const std::string dir = testsupport::fresh_dir("no-rank-zero");
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("no-zero", 2, 1, 4));
  const int port = hw::free_port_pair();
  const auto r = testsupport::run_cli("node --rank 1 --cluster " + write_cluster(dir, 2, port) + " " + scenario +
                                      " --bootstrap-timeout 1");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("error: cannot connect to 127.0.0.1:" + std::to_string(port)), std::string::npos) << r.output;
}

}  // namespace
