// Several hosts on this one machine: one rank per network namespace, joined by
// a full mesh of veth pairs, over TCP. Skipped (with the reason) where
// namespaces cannot be made.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"
#include "support/netns_mesh.hpp"
#include "support/real_run.hpp"

namespace {

using nlohmann::json;

class NetnsMeshTest : public testing::Test {
 protected:
  void SetUp() override {
    const std::string why = testsupport::NetnsMesh::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

std::string launch_args(const testsupport::NetnsMesh& mesh, const std::string& cluster, const std::string& scenario,
                        const std::string& out) {
  return "launch " + scenario + " --hostfile " + cluster + " --exec-prefix '" + mesh.exec_prefix() + "' --out " + out +
         " --timeout 60";
}

TEST_F(NetnsMeshTest, NodesOnePerNamespaceRunOverTheVethMesh) {
  const int world = 4;
  testsupport::NetnsMesh mesh(world);
  const std::string dir = testsupport::fresh_dir("netns-run");
  const std::string cluster = testsupport::write_json(dir, "cluster", mesh.cluster(5000));
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("netns", world, 2, 8));
  const auto r = testsupport::run_cli(launch_args(mesh, cluster, scenario, dir + "/out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json report = json::parse(testsupport::read_file(dir + "/out/report.json"));
  EXPECT_EQ(report["summary"]["requests"]["completed"], 2);
  for (const auto& n : report["nodes"]) EXPECT_EQ(n["error"], "") << n.dump();
}

// The probe measures the shaped mesh; the simulator, given that card, predicts
// the decode speed the real processes reach on it within 15%.
TEST_F(NetnsMeshTest, ProbedCardPredictsRealDecodeSpeed) {
  const int world = 4;
  testsupport::NetnsMesh mesh(world, "rate 200mbit burst 16kb latency 100ms");
  const std::string dir = testsupport::fresh_dir("netns-predict");
  const std::string cluster = testsupport::write_json(dir, "cluster", mesh.cluster(5000));
  const std::string card = dir + "/veth-probed.json";
  const auto probe = testsupport::run_cli("probe --cluster " + cluster + " --exec-prefix '" + mesh.exec_prefix() +
                                          "' --out " + card + " --pings 30 --bytes 1000000 --repeats 2 --timeout 60");
  ASSERT_EQ(probe.exit_code, 0) << probe.output;
  const json probed = json::parse(testsupport::read_file(card));
  EXPECT_NEAR(probed["bandwidth_gbps"].get<double>(), 0.2, 0.05) << probe.output;   // the tbf rate

  // A batch of 8 decodes: all-reduces of 48 KB, so the link's rate, not its
  // 16 KB burst nor the CPU, sets the pace.
  json s = testsupport::small_scenario("netns-predict", world, 8, 16, "fail-stop", "veth-probed");
  s["workload"]["prompt_tokens"] = 4;
  s["workload"]["arrival"] = {{"type", "closed"}, {"concurrency", 8}};
  const std::string scenario = testsupport::write_json(dir, "s", s);
  const auto real = testsupport::run_cli(launch_args(mesh, cluster, scenario, dir + "/real") + " --card " + card);
  ASSERT_EQ(real.exit_code, 0) << real.output;
  const auto simulated = testsupport::run_cli("run --quiet " + scenario + " --card " + card + " --out " + dir + "/sim");
  ASSERT_EQ(simulated.exit_code, 0) << simulated.output;
  const auto decode = [&](const std::string& out) {
    return json::parse(testsupport::read_file(dir + out + "/report.json"))["summary"]["decode_tokens_per_s"].get<double>();
  };
  const double measured = decode("/real"), predicted = decode("/sim");
  EXPECT_LT(std::abs(predicted - measured) / measured, 0.15)
      << "measured " << measured << " tok/s, predicted " << predicted << " tok/s\n" << probe.output;
}

}  // namespace
