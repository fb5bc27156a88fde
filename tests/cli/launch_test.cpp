// Real processes over TCP on loopback: `launch --local` runs a scenario to one
// report, kill -9 of any rank mid-decode ends in a report within bounded time
// with no process left behind, and the hostfile path runs what it should.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/child_process.hpp"
#include "support/cli_runner.hpp"
#include "support/real_run.hpp"

namespace {

using nlohmann::json;
using testsupport::ChildProcess;

constexpr double kLaunchBoundS = 60;  // any of these runs takes a few seconds

json read_report(const std::string& dir) { return json::parse(testsupport::read_file(dir + "/report.json")); }

TEST(Launch, LocalRanksRunTheScenarioToOneReport) {
  const std::string dir = testsupport::fresh_dir("launch-local");
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("launch-local", 2, 2, 8));
  const auto r = testsupport::run_cli("launch --local 2 " + scenario + " --out " + dir + "/out --timeout 60");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[rank 0] launch-local: decode"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("ranks share this machine's"), std::string::npos) << "2 ranks, never fewer than 2 cores";
  // The last line is the outcome, and the reports name what the ranks talked over.
  EXPECT_NE(r.output.find("launch: outcome (rank 0 reported): 2 of 2 requests completed; over tcp between 2 ranks "
                          "on 127.0.0.1"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("; as expected; exit 0\n"), std::string::npos) << r.output;
  EXPECT_NE(testsupport::read_file(dir + "/out/report.md").find("| transport (real processes) | tcp between 2 ranks"),
            std::string::npos);
  const json report = read_report(dir + "/out");
  EXPECT_EQ(report["transport"], "tcp between 2 ranks on 127.0.0.1");
  EXPECT_EQ(report["summary"]["requests"]["completed"], 2);
  EXPECT_EQ(report["summary"]["output_tokens"], 16);
  EXPECT_GT(report["summary"]["decode_tokens_per_s"].get<double>(), 0);
  ASSERT_EQ(report["nodes"].size(), 2u);
  for (const auto& n : report["nodes"]) {
    EXPECT_EQ(n["error"], "") << n.dump();
    EXPECT_GT(n["bytes_sent"].get<double>(), 0) << "every rank took part in the all-reduces";
  }
}

// The pids of `launch`'s `world` ranks once all have joined; -1 for every
// rank when one did not.
std::vector<pid_t> ranks_joined(ChildProcess& launch, int world) {
  for (int r = 0; r < world; ++r)
    if (launch.wait_for_line("[rank " + std::to_string(r) + "] rank " + std::to_string(r) + ": joined", 30).empty()) {
      ADD_FAILURE() << "rank " << r << " did not join:\n" << launch.output();
      return std::vector<pid_t>(world, -1);
    }
  return testsupport::rank_pids(launch.output(), world);
}

// `meshinfer launch --local WORLD SCENARIO` into DIR/out, bounded by 60 s.
std::vector<std::string> launch_local(int world, const std::string& scenario, const std::string& dir) {
  return {MESHINFER_BINARY, "launch",    "--local", std::to_string(world), scenario, "--out",
          dir + "/out",     "--timeout", "60"};
}

// ranks_joined, then well into decode: the runs of these tests last seconds.
std::vector<pid_t> ranks_mid_decode(ChildProcess& launch, int world) {
  const auto pids = ranks_joined(launch, world);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  return pids;
}

class KillNine : public testing::TestWithParam<int> {};

// Four ranks decode; rank k is killed with SIGKILL mid-decode. The survivors
// detect it, recover as the scenario says (replan), and one report comes out.
TEST_P(KillNine, SurvivorsDetectRecoverAndReport) {
  const int victim = GetParam(), world = 4;
  const std::string dir = testsupport::fresh_dir("kill-" + std::to_string(victim));
  const json s = testsupport::small_scenario("kill-nine", world, 2, 60);
  const double timeout_s = s["recovery"]["heartbeat_timeout_s"];
  const std::string scenario = testsupport::write_json(dir, "s", s);
  ChildProcess launch(launch_local(world, scenario, dir));
  const auto pids = ranks_mid_decode(launch, world);
  ASSERT_GT(pids[victim], 0) << launch.output();
  const double killed_at_unix = testsupport::unix_now_s();
  ASSERT_EQ(::kill(pids[victim], SIGKILL), 0);

  const auto started = std::chrono::steady_clock::now();
  const int status = launch.wait(kLaunchBoundS);
  ASSERT_NE(status, -1) << "launch did not end in " << kLaunchBoundS << " s:\n" << launch.output();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), kLaunchBoundS);
  for (int r = 0; r < world; ++r) EXPECT_TRUE(testsupport::process_gone(pids[r])) << "rank " << r << " left behind";
  // The launch's status is the reporter's: the victim's own is not the run's verdict, its lost requests are.
  EXPECT_EQ(status, victim == 0 ? 1 : 0) << launch.output();
  const std::string reporter = victim == 0 ? "1" : "0";
  EXPECT_NE(launch.output().find("launch: outcome (rank " + reporter + " reported): " +
                                 (victim == 0 ? "0 of 2 requests completed, 2 failed" : "2 of 2 requests completed")),
            std::string::npos)
      << launch.output();
  // The detection was printed as it happened, before the report.
  const std::size_t live = launch.output().find("[rank " + reporter + "] rank " + reporter + ": at ");
  ASSERT_NE(live, std::string::npos) << launch.output();
  EXPECT_NE(launch.output().find(": detected m", live), std::string::npos) << launch.output();
  EXPECT_LT(live, launch.output().find("[rank " + reporter + "] reports:")) << launch.output();

  const json report = read_report(dir + "/out");
  const double killed_at = killed_at_unix - testsupport::clock_zero_unix_s(launch.output());
  EXPECT_NE(report["nodes"][victim]["error"], "") << "the dead rank's results are marked lost";
  if (victim == 0) {
    // The coordinator's scheduler died with it; rank 1 reports what the survivors saw.
    EXPECT_NE(launch.output().find("[rank 1] rank 1: rank 0 is gone; this rank reports"), std::string::npos)
        << launch.output();
    for (int r = 1; r < world; ++r) EXPECT_NE(report["nodes"][r]["error"], "") << r;
    EXPECT_LE(report["summary"]["simulated_s"].get<double>() - killed_at, 2 * timeout_s) << launch.output();
    // Every request of the workload is lost with it, and each survivor says it saw the coordinator go.
    EXPECT_EQ(report["summary"]["requests"]["completed"], 0) << report["requests"].dump(2);
    EXPECT_EQ(report["summary"]["requests"]["failed"], 2) << report["requests"].dump(2);
    int detections = 0;
    for (const auto& e : report["events"]) detections += e["kind"] == "detected" && e["target"] == "m1";
    EXPECT_EQ(detections, world - 1) << report["events"].dump(2);
    return;
  }
  double detected_at = -1;
  for (const auto& e : report["events"])
    if (e["kind"] == "detected" && detected_at < 0) detected_at = e["t_s"];
  ASSERT_GE(detected_at, 0) << report["events"].dump(2);
  EXPECT_LE(detected_at - killed_at, 2 * timeout_s) << report["events"].dump(2);
  EXPECT_GE(detected_at - killed_at, -0.05) << "detected before the kill?";
  // replan: the model is re-placed on the three survivors and no request is lost.
  EXPECT_EQ(report["summary"]["requests"]["completed"], 2) << report["events"].dump(2);
  EXPECT_EQ(report["summary"]["requests"]["failed"], 0);
}

INSTANTIATE_TEST_SUITE_P(EveryRank, KillNine, testing::Range(0, 4));

// A machine that loses power closes no connection: what is sent to it goes
// out without an error. Rank 0 stopped with its connections open is that
// machine; the survivors must see it gone by its silence, and rank 1 report.
TEST(Launch, ACoordinatorSilentWithItsConnectionsOpenIsLeftBehindAndRank1Reports) {
  const int world = 4;
  const std::string dir = testsupport::fresh_dir("silent-coordinator");
  const std::string scenario =
      testsupport::write_json(dir, "s", testsupport::small_scenario("silent-coordinator", world, 2, 60));
  ChildProcess launch(launch_local(world, scenario, dir));
  const auto pids = ranks_mid_decode(launch, world);
  ASSERT_GT(pids[0], 0) << launch.output();
  ASSERT_EQ(::kill(pids[0], SIGSTOP), 0);
  const std::string reports = launch.wait_for_line("[rank 1] rank 1: rank 0 is gone; this rank reports", 30);
  ::kill(pids[0], SIGKILL);  // what the launcher would otherwise wait for until its timeout
  ASSERT_NE(reports, "") << launch.output();
  ASSERT_NE(launch.wait(kLaunchBoundS), -1) << launch.output();
  const json report = read_report(dir + "/out");
  for (int r = 1; r < world; ++r)
    EXPECT_NE(report["nodes"][r]["error"].get<std::string>().find("coordinator m1 lost"), std::string::npos) << r;
  EXPECT_EQ(report["summary"]["requests"]["failed"], 2) << report["requests"].dump(2);
}

// Rank 1 hangs until rank 0 has reported and gone: when it resumes, it finds
// every rank below it gone, but rank 0 said it reports, so rank 1 leaves
// rank 0's report as it is instead of writing its own over it.
TEST(Launch, ARankThatResumesAfterTheRunLeavesTheReportToTheReporter) {
  const int world = 4;
  const std::string dir = testsupport::fresh_dir("resumed-late");
  const std::string scenario =
      testsupport::write_json(dir, "s", testsupport::small_scenario("resumed-late", world, 2, 60));
  ChildProcess launch(launch_local(world, scenario, dir));
  const auto pids = ranks_mid_decode(launch, world);
  ASSERT_GT(pids[1], 0) << launch.output();
  ASSERT_EQ(::kill(pids[1], SIGSTOP), 0);
  const std::string reported = launch.wait_for_line("[rank 0] reports:", 30);
  ::kill(pids[1], SIGCONT);
  ASSERT_NE(reported, "") << launch.output();
  ASSERT_NE(launch.wait(kLaunchBoundS), -1) << launch.output();
  EXPECT_EQ(launch.output().find("rank 1: rank 0 is gone; this rank reports"), std::string::npos) << launch.output();
  const json report = read_report(dir + "/out");
  EXPECT_EQ(report["nodes"][0]["error"], "") << report["nodes"].dump(2);  // rank 0's view, not rank 1's
}

// The launcher itself is killed (it cannot clean up): each rank notices its
// parent is gone and ends too (prctl on Linux, a watcher on other systems).
TEST(Launch, RanksDieWithTheirLauncher) {
  const int world = 2;
  const std::string dir = testsupport::fresh_dir("launcher-killed");
  const std::string scenario =
      testsupport::write_json(dir, "s", testsupport::small_scenario("orphans", world, 2, 2000));
  ChildProcess launch(launch_local(world, scenario, dir));
  const auto pids = ranks_joined(launch, world);
  ASSERT_GT(pids[0], 0) << launch.output();
  ASSERT_EQ(::kill(launch.pid(), SIGKILL), 0);
  for (int r = 0; r < world; ++r) {
    for (int tries = 0; tries < 100 && !testsupport::process_gone(pids[r]); ++tries)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(testsupport::process_gone(pids[r])) << "rank " << r << " outlived its launcher by 10 s";
    ::kill(pids[r], SIGKILL);  // whatever the outcome, leave nothing behind
  }
}

TEST(Launch, HostfileRunsEachRankOverSsh) {
  const std::string dir = testsupport::fresh_dir("launch-hostfile");
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("hostfile", 2, 1, 4));
  const std::string hostfile = testsupport::write_json(
      dir, "hosts",
      json::array({{{"ssh", "mac1.local"}, {"ips", {"10.0.1.1"}}}, {{"ssh", "mac2.local"}, {"ips", {"10.0.1.2"}}}}));
  const auto r = testsupport::run_cli("launch " + scenario + " --hostfile " + hostfile + " --dry-run --out /tmp/o");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Each rank is the simulator-free program beside meshinfer, told the plan the launch chose.
  const std::string rank_exe = std::filesystem::path(MESHINFER_BINARY).parent_path() / "meshinfer-node";
  EXPECT_NE(r.output.find("ssh -o BatchMode=yes mac2.local '" + rank_exe + "' '--rank' '1' '--cluster' '" + hostfile +
                          "' '" + scenario + "' '--out' '/tmp/o' '--parallelism' 'tensor'"),
            std::string::npos)
      << r.output;
  // The cluster file has no secret: launch makes one and hands it over on stdin, not on the command line.
  EXPECT_NE(r.output.find("'--secret-stdin'"), std::string::npos) << r.output;
}

TEST(Launch, RdmaTransportWithoutItsDeviceIsRefusedClearly) {
  const std::string dir = testsupport::fresh_dir("launch-rdma");
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("rdma", 2, 1, 4));
  const std::string cluster = testsupport::write_json(
      dir, "cluster",
      {{"transport", "rdma"},
       {"port", 5000},
       {"hosts",
        json::array({{{"ssh", "localhost"}, {"ips", {"127.0.0.1"}}, {"rdma", {nullptr, "no_such_rdma_dev"}}},
                     {{"ssh", "localhost"}, {"ips", {"127.0.0.1"}}, {"rdma", {"no_such_rdma_dev", nullptr}}}})}});
  const auto r = testsupport::run_cli("node --rank 0 --cluster " + cluster + " " + scenario);
  EXPECT_EQ(r.exit_code, 2) << r.output;
#ifdef MESHINFER_HAVE_VERBS
  // Refused before waiting on any peer.
  EXPECT_NE(r.output.find("rank 0 -> rank 1: RDMA device \"no_such_rdma_dev\" not found on this host"),
            std::string::npos)
      << r.output;
#else
  EXPECT_NE(r.output.find(cluster + ": /transport: the rdma transport is not built in"), std::string::npos) << r.output;
#endif
}

TEST(Launch, ClusterOfTheWrongSizeIsRefusedBeforeStarting) {
  const std::string dir = testsupport::fresh_dir("launch-size");
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("size", 2, 1, 4));
  const auto r = testsupport::run_cli("launch --local 3 " + scenario + " --out " + dir + "/out");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("3 host(s), but scenario"), std::string::npos) << r.output;
}

// A crash --local cannot carry out is refused, not skipped while the run's
// expectations are judged as if it had happened; --ignore-faults runs without it.
TEST(Launch, LocalRefusesFaultsItCannotApplyUnlessToldToIgnoreThem) {
  const std::string dir = testsupport::fresh_dir("launch-faults");
  json s = testsupport::small_scenario("launch-faults", 2, 1, 4);
  s["faults"] = json::array({{{"at_s", 0.5}, {"kind", "node-crash"}, {"target", "m2"}}});
  const std::string scenario = testsupport::write_json(dir, "s", s);
  const auto refused = testsupport::run_cli("launch --local 2 " + scenario + " --out " + dir + "/refused");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find(scenario + ": /faults/0/kind: node-crash: launch --local and --hostfile apply no"),
            std::string::npos)
      << refused.output;
  const auto ignored =
      testsupport::run_cli("launch --local 2 " + scenario + " --ignore-faults --out " + dir + "/out --timeout 60");
  ASSERT_EQ(ignored.exit_code, 0) << ignored.output;
  EXPECT_NE(ignored.output.find("elapsed"), std::string::npos) << ignored.output;
  EXPECT_NE(testsupport::read_file(dir + "/out/report.md").find("| elapsed time (real processes) |"), std::string::npos);
  EXPECT_EQ(read_report(dir + "/out")["summary"]["requests"]["completed"], 1);
  const std::string warning = "the scenario's faults are injected in simulation only";
  const auto first = ignored.output.find(warning);
  EXPECT_NE(first, std::string::npos) << ignored.output;
  EXPECT_EQ(ignored.output.find(warning, first + 1), std::string::npos) << "said once, not once a rank\n"
                                                                         << ignored.output;
}

// Faults and policies real processes cannot carry out yet are refused before
// anything is built (so without root too), with the file, JSON path and reason.
TEST(Launch, NetnsRefusesWhatRealProcessesCannotDoWithTheReason) {
  const std::string ci = std::string(MESHINFER_SOURCE_DIR) + "/scenarios/ci/";
  const std::string dir = testsupport::fresh_dir("netns-refused");
  nlohmann::json crawling = nlohmann::json::parse(testsupport::read_file(ci + "node-slow.json"));
  crawling.erase("$schema");
  crawling["faults"][0]["factor"] = 1e-4;
  nlohmann::json switched = nlohmann::json::parse(testsupport::read_file(ci + "link-down-replan.json"));
  switched.erase("$schema");
  switched["cluster"]["fabric"]["link"] = "10gbe";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {testsupport::write_json(dir, "switched", switched), "/cluster/fabric/link: 10gbe is a switched network"},
      {testsupport::write_json(dir, "crawling", crawling), "/faults/0/factor: node-slow: x0.0001 of a rank's"}};
  for (const auto& [file, reason] : refused) {
    const auto r = testsupport::run_cli("launch " + file + " --netns --out " + dir + "/out");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(file + ": " + reason), std::string::npos) << r.output;
  }
}

}  // namespace
