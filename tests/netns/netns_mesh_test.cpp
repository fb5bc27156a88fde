// Several hosts on this one machine: one rank per network namespace, joined by
// a full mesh of veth pairs, over TCP. Skipped (with the reason) where
// namespaces cannot be made; a failure instead on CI as root.
#include "hw/netns_mesh.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"
#include "support/real_run.hpp"
#include "support/skip.hpp"

namespace {

using nlohmann::json;

class NetnsMeshTest : public testing::Test {
 protected:
  void SetUp() override {
    const std::string why = hw::NetnsMesh::unavailable_reason();
    // Root can make namespaces, and CI runs as root: there this skip is a failure.
    if (!why.empty()) SKIP_UNLESS_CI_PROVIDES(::geteuid() == 0, why);
  }
};

std::string launch_args(const hw::NetnsMesh& mesh, const std::string& cluster, const std::string& scenario,
                        const std::string& out) {
  return "launch " + scenario + " --hostfile " + cluster + " --exec-prefix '" + mesh.exec_prefix() + "' --out " + out +
         " --timeout 60";
}

TEST_F(NetnsMeshTest, NodesOnePerNamespaceRunOverTheVethMesh) {
  const int world = 4;
  hw::NetnsMesh mesh(world);
  const std::string dir = testsupport::fresh_dir("netns-run");
  const std::string cluster = testsupport::write_json(dir, "cluster", mesh.cluster(5000));
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("netns", world, 2, 8));
  const auto r = testsupport::run_cli(launch_args(mesh, cluster, scenario, dir + "/out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json report = json::parse(testsupport::read_file(dir + "/out/report.json"));
  EXPECT_EQ(report["summary"]["requests"]["completed"], 2);
  for (const auto& n : report["nodes"]) EXPECT_EQ(n["error"], "") << n.dump();
}

// The probe writes a link card for the shaped mesh that both worlds accept:
// real processes launched with it and the simulator given it each complete
// every request. How close the two decode speeds are is a timing claim, so it
// lives in build/bench/netns_predict_bench, not here.
TEST_F(NetnsMeshTest, ProbedCardRunsInBothWorlds) {
  const int world = 4;
  hw::NetnsMesh mesh(world, hw::cable_tbf(hw::kCableRateBps));
  const std::string dir = testsupport::fresh_dir("netns-probe");
  const std::string cluster = testsupport::write_json(dir, "cluster", mesh.cluster(5000));
  const std::string card = dir + "/veth-probed.json";
  const auto probe = testsupport::run_cli("probe --cluster " + cluster + " --exec-prefix '" + mesh.exec_prefix() +
                                          "' --out " + dir + " --name veth-probed --pings 10 --bytes 200000 "
                                          "--repeats 1 --timeout 60");
  ASSERT_EQ(probe.exit_code, 0) << probe.output;
  const json probed = json::parse(testsupport::read_file(card));
  EXPECT_GT(probed["bandwidth_gbps"].get<double>(), 0) << probe.output;
  EXPECT_GT(probed["latency_us"].get<double>(), 0) << probe.output;
  // TCP is a byte stream: messages are not padded to frames, each frame carries headers.
  EXPECT_EQ(probed["frame_bytes"], 1448) << probe.output;
  EXPECT_EQ(probed["frame_header_bytes"], 66) << probe.output;
  // The mesh busy as in a run sets the per-message overhead, never below 0.
  EXPECT_GE(probed["per_message_overhead_us"].get<double>(), 0) << probe.output;
  EXPECT_NE(probed["notes"].get<std::string>().find("Every rank messaging every other at once took"),
            std::string::npos)
      << probed.dump(2);

  const std::string scenario = testsupport::write_json(
      dir, "s", testsupport::small_scenario("netns-probe", world, 2, 8, "fail-stop", "veth-probed"));
  const auto real = testsupport::run_cli(launch_args(mesh, cluster, scenario, dir + "/real") + " --card " + card);
  ASSERT_EQ(real.exit_code, 0) << real.output;
  const auto simulated = testsupport::run_cli("run --quiet " + scenario + " --card " + card + " --out " + dir + "/sim");
  ASSERT_EQ(simulated.exit_code, 0) << simulated.output;
  for (const char* out : {"/real", "/sim"}) {
    const json report = json::parse(testsupport::read_file(dir + out + "/report.json"));
    EXPECT_EQ(report["summary"]["requests"]["completed"], 2) << out;
  }
}

}  // namespace
