// launch --netns leaves no namespace behind, also when the launcher itself is
// killed and cannot clean up: its guard process does; over the rdma transport
// a pulled cable is handled by the scenario's policy. Skipped (with the
// reason) where namespaces cannot be made; a failure instead on CI as root.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "hw/netns_mesh.hpp"
#include "netns/softrdma_library.hpp"
#include "support/child_process.hpp"
#include "support/cli_runner.hpp"
#include "support/real_run.hpp"
#include "support/skip.hpp"

namespace {

bool namespaces_named(const std::string& prefix) {
  return testsupport::run_shell("ip netns list").output.find(prefix) != std::string::npos;
}

TEST(LaunchNetns, NamespacesGoEvenWhenTheLauncherIsKilled) {
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty())
    SKIP_UNLESS_CI_PROVIDES(::geteuid() == 0, why);
  const std::string dir = testsupport::fresh_dir("netns-launcher-killed");
  const std::string scenario =
      testsupport::write_json(dir, "s", testsupport::small_scenario("netns-killed", 2, 2, 2000));
  testsupport::ChildProcess launch(
      {MESHINFER_BINARY, "launch", scenario, "--netns", "--out", dir + "/out", "--timeout", "120"});
  // Once the ranks have joined: the probe before them has ended (its processes outlive a killed launcher).
  ASSERT_NE(launch.wait_for_line("[rank 1] rank 1: joined a world of 2", 60), "") << launch.output();
  const std::string prefix = "mi" + std::to_string(launch.pid()) + "n";
  ASSERT_TRUE(namespaces_named(prefix)) << testsupport::run_shell("ip netns list").output;

  ASSERT_EQ(::kill(launch.pid(), SIGKILL), 0);
  launch.wait(10);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (namespaces_named(prefix) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(namespaces_named(prefix)) << testsupport::run_shell("ip netns list").output;
}

// The report of 4 ranks over the rdma transport on the netns mesh (launch
// --netns --netns-rdma: softrdma preloaded, its device on each veth) under
// `fault` and `policy`, with every event as "kind: detail" lines in `events`.
// The tiny model: a decode step is a few small all-reduces, so the run is
// seconds even on 4 KiB frames through 50 Mbit/s veths.
nlohmann::json rdma_mesh_report(const std::string& name, const nlohmann::json& fault, std::string& events,
                                const std::string& policy = "replan") {
  const std::string dir = testsupport::fresh_dir(name);
  const auto model = testsupport::run_cli("make-model --out " + dir + "/tiny");
  EXPECT_EQ(model.exit_code, 0) << model.output;
  nlohmann::json s = testsupport::small_scenario(name, 4, 2, 150, policy, "tb5-rdma");
  s["model"] = {{"path", dir + "/tiny"}};
  s["faults"] = nlohmann::json::array({fault});
  testsupport::ChildProcess launch({"/usr/bin/env", std::string("LD_PRELOAD=") + testsupport::kSoftRdma,
                                    MESHINFER_BINARY, "launch", testsupport::write_json(dir, "s", s), "--netns",
                                    "--netns-rdma", "--out", dir + "/out", "--timeout", "90"});
  EXPECT_EQ(launch.wait(120), 0) << launch.output();
  EXPECT_NE(testsupport::read_file(dir + "/out/cluster.json").find("\"rdma_v1\""), std::string::npos);
  const nlohmann::json report = nlohmann::json::parse(testsupport::read_file(dir + "/out/report.json"));
  for (const auto& e : report["events"])
    events += e["kind"].get<std::string>() + ": " + e["detail"].get<std::string>() + "\n";
  std::printf("%s: detected %s s after the fault\n%s", name.c_str(),
              report["faults"]["time_to_detect_s"].dump().c_str(), events.c_str());
  return report;
}

// A cable pulled between two ranks that talk RDMA: both ends' ports go DOWN,
// the engine notices and, as the scenario's policy says, re-places the model
// on the survivors without losing a request. As scenarios/ci/link-down-replan:
// the cable between two members, so the end dropped still reports to rank 0.
TEST(LaunchNetns, ACablePulledUnderTheRdmaTransportIsHandledByTheScenariosPolicy) {
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty())
    SKIP_UNLESS_CI_PROVIDES(::geteuid() == 0, why);
  SKIP_UNLESS_SOFTRDMA_BUILT();
  std::string events;
  const nlohmann::json report =
      rdma_mesh_report("netns-rdma-link-down", {{"at_s", 1.0}, {"kind", "link-down"}, {"target", "m2-m3"}}, events);
  EXPECT_NE(events.find("link-down: cable unplugged"), std::string::npos) << events;
  EXPECT_NE(events.find("detected: "), std::string::npos) << events;
  // Within the bound small_scenario's heartbeats imply (timeout 2 s + 3 beats of 0.1 s,
  // engine/faults/fault_timeline.hpp): a property of the detector, not a speed.
  EXPECT_LE(report["faults"]["time_to_detect_s"].get<double>(), 2.0 + 3 * 0.1) << events;
  EXPECT_NE(events.find("recovered: re-placed on 3 node(s)"), std::string::npos) << events;
  EXPECT_EQ(report["summary"]["requests"]["completed"], 2) << events;
  EXPECT_EQ(report["summary"]["requests"]["failed"], 0);
}

// The same cable pulled under `reroute`: a third node relays between its two
// ends on its own queue pairs (the verbs transport forwards the frames), so
// the model stays on all four nodes and every request completes.
TEST(LaunchNetns, ACablePulledUnderTheRdmaTransportIsRoutedThroughAThirdNode) {
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty())
    SKIP_UNLESS_CI_PROVIDES(::geteuid() == 0, why);
  SKIP_UNLESS_SOFTRDMA_BUILT();
  std::string events;
  const nlohmann::json report = rdma_mesh_report(
      "netns-rdma-reroute", {{"at_s", 1.0}, {"kind", "link-down"}, {"target", "m2-m3"}}, events, "reroute");
  EXPECT_NE(events.find("link-down: cable unplugged"), std::string::npos) << events;
  EXPECT_NE(events.find("recovered: rerouted m2-m3 through m"), std::string::npos) << events;
  EXPECT_EQ(events.find("re-placed"), std::string::npos) << events;
  EXPECT_EQ(report["summary"]["requests"]["completed"], 2) << events;
  EXPECT_EQ(report["summary"]["requests"]["failed"], 0);
}

// The scenario's rdma-packet-loss on one cable, carried out by softrdma's
// devices at its two ends only: the transport resends nothing, so the first
// frame lost ends that link, and replan drops one end as for a pulled cable;
// the other cables lose nothing, so the survivors finish every request.
TEST(LaunchNetns, PacketLossOnOneRdmaCableEndsThatLinkAndTheOthersCarryOn) {
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty())
    SKIP_UNLESS_CI_PROVIDES(::geteuid() == 0, why);
  SKIP_UNLESS_SOFTRDMA_BUILT();
  std::string events;
  const nlohmann::json report = rdma_mesh_report(
      "netns-rdma-loss", {{"at_s", 1.0}, {"kind", "rdma-packet-loss"}, {"target", "m2-m3"}, {"loss", 0.2}}, events);
  EXPECT_NE(events.find("rdma-packet-loss: softrdma loses 20% and reorders 0% of the packets on m2-m3"),
            std::string::npos)
      << events;
  EXPECT_EQ(report["faults"]["injected"], 1) << report["faults"].dump(2);
  EXPECT_NE(events.find("recovered: re-placed on 3 node(s)"), std::string::npos) << events;
  EXPECT_EQ(report["summary"]["requests"]["completed"], 2) << events;
  EXPECT_EQ(report["summary"]["requests"]["failed"], 0);
}

}  // namespace
