// CI's fault scenarios run twice with a tiny model: simulated, and as real
// processes in network namespaces (`launch --netns`, the faults applied to
// the ranks and veths), the simulation on the link card probed on that mesh.
// `meshinfer compare` must find the same outcomes, recovery decisions and
// tokens. Speeds are a timing claim (bench/netns_predict_bench), so they are
// not judged here (--relative 1). Skipped, with the reason, where namespaces
// cannot be made; a failure instead on CI as root.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "hw/netns_mesh.hpp"
#include "netns/softrdma_library.hpp"
#include "support/cli_runner.hpp"
#include "support/real_run.hpp"
#include "support/skip.hpp"

namespace {

using nlohmann::json;

const std::string kCi = std::string(MESHINFER_SOURCE_DIR) + "/scenarios/ci/";

// The CI scenario `s` with the tiny model at `model_dir`, enough tokens that
// the faults land mid-decode in both worlds, and heartbeats a loaded machine keeps.
// The first request outlasts the faults (at 1 s) by half a second at the
// fastest real decode seen here (2.4 ms a token): with 400, a real run
// sometimes finished it before a fail-stop crash that the simulation met.
// A scenario with a secondary network ends on it, which carries a sixth of the
// cables' traffic: fewer tokens keep its twin as short as the others. The
// scenario's own arrival is kept: four requests at once take fewer steps.
json twin_of(json s, const std::string& name, const std::string& model_dir) {
  s.erase("$schema");
  s.erase("expect");
  s["name"] = "twin-" + name;
  s["model"] = {{"path", model_dir}};
  const int tokens = s["cluster"]["fabric"].contains("secondary_link") ? 150 : 640;
  json workload = {{"requests", 4}, {"prompt_tokens", 16}, {"output_tokens", tokens}};
  if (s["workload"].contains("arrival")) workload["arrival"] = s["workload"]["arrival"];
  s["workload"] = workload;
  s["recovery"]["heartbeat_s"] = 0.1;
  s["recovery"]["heartbeat_timeout_s"] = 0.5;
  s["deadline_s"] = 120;
  return s;
}

class NetnsTwinScenario : public testing::Test {
 protected:
  void SetUp() override {
    const std::string why = hw::NetnsMesh::unavailable_reason();
    if (!why.empty()) SKIP_UNLESS_CI_PROVIDES(::geteuid() == 0, why);
  }
};
class NetnsTwin : public NetnsTwinScenario, public testing::WithParamInterface<const char*> {};

json ci_scenario(const std::string& name) { return json::parse(testsupport::read_file(kCi + name + ".json")); }

// Launches `s`'s twin on a netns mesh and simulates it on the probed card
// (both worlds given the extra `cards`): `meshinfer compare` must find the two
// runs in agreement. `noted_as`: the kind of the event that notes the fault
// (default: the fault's), `times` such events; `rdma`: the ranks talk verbs
// over softrdma (--netns-rdma). Returns the launch's output.
std::string expect_twins_agree(const json& s, const std::string& name, const std::vector<std::string>& cards = {},
                               const std::string& noted_as = "", int times = 1, bool rdma = false) {
  const std::string dir = testsupport::fresh_dir("twin-" + name);
  const auto model = testsupport::run_cli("make-model --out " + dir + "/tiny");
  EXPECT_EQ(model.exit_code, 0) << model.output;
  const json twin = twin_of(s, name, dir + "/tiny");
  std::string with_cards;
  for (const auto& c : cards) with_cards += " --card " + c;
  const std::string scenario = testsupport::write_json(dir, "s", twin);

  const std::string launch = "launch " + scenario + with_cards + " --netns --out " + dir + "/real --timeout 120";
  const auto real = rdma ? testsupport::run_shell("env LD_PRELOAD=" + std::string(testsupport::kSoftRdma) + " " +
                                                  MESHINFER_BINARY + " " + launch + " --netns-rdma 2>&1")
                         : testsupport::run_cli(launch);
  const json report = json::parse(testsupport::read_file(dir + "/real/report.json"));
  int applied = 0;
  const std::string kind = noted_as.empty() ? twin["faults"][0]["kind"].get<std::string>() : noted_as;
  for (const auto& e : report["events"]) applied += e["kind"] == kind;
  EXPECT_EQ(applied, times) << "the scenario's one fault, applied by the launcher\n" << real.output;

  std::string probed;  // the link cards of the mesh: its cables' and its secondary network's
  for (const auto& card : std::filesystem::directory_iterator(dir + "/real/cards"))
    probed += " --card " + card.path().string();
  const auto sim = testsupport::run_cli("run --quiet " + scenario + with_cards + probed + " --out " + dir + "/sim");
  EXPECT_EQ(sim.exit_code, 0) << sim.output;
  const auto compare =
      testsupport::run_cli("compare --relative 1 " + dir + "/sim/report.json " + dir + "/real/report.json");
  EXPECT_EQ(compare.exit_code, 0) << compare.output << "\n--- real run:\n" << real.output;
  return real.output;
}

TEST_P(NetnsTwin, SimulatedAndRealRunsAgreeOnOutcomesDecisionsAndTokens) {
  expect_twins_agree(ci_scenario(GetParam()), GetParam());
}

// No CI scenario adds latency: link-down-replan's cable degraded instead, to
// half its rate and +50 ms (the ranks hold their messages), for 2 s mid-decode.
TEST_F(NetnsTwinScenario, ALinkDegradeWithAddedLatencyAgrees) {
  json s = ci_scenario("link-down-replan");
  s["faults"] = json::array({{{"at_s", 1.0},
                              {"kind", "link-degrade"},
                              {"target", "m2-m3"},
                              {"factor", 0.5},
                              {"added_latency_s", 0.05},
                              {"duration_s", 2.0}}});
  expect_twins_agree(s, "link-degrade");
}

// The catalog's hardware card `name` booting in 1 s; a card replaces the catalog's of its file's name.
std::string quick_boot(const std::string& name) {
  json card = json::parse(
      testsupport::read_file(std::string(MESHINFER_SOURCE_DIR) + "/scenarios/catalog/hardware/" + name + ".json"));
  card["boot_s"] = 1;
  return testsupport::write_json(testsupport::fresh_dir("quick-boot-" + name), name, card);
}

// node-crash-replan's crash as a restart, on a card that boots m4 in 1 s:
// its rank is started again mid-run and, as in simulation, left out.
TEST_F(NetnsTwinScenario, ARestartedNodeIsStartedAgainAndLeftOutOfTheInstance) {
  json s = ci_scenario("node-crash-replan");
  s["faults"][0]["kind"] = "node-restart";
  const std::string launched = expect_twins_agree(s, "node-restart", {quick_boot("m3-ultra-256gb")}, "node-crash");
  EXPECT_NE(launched.find("launch: rank 3 is pid"), std::string::npos) << launched;
  EXPECT_NE(launched.find("(started again)"), std::string::npos) << launched;
  EXPECT_NE(launched.find("applying node-up m4"), std::string::npos) << launched;
}

// TCP over Thunderbolt's kernel panic reboots the two nodes the scenario's seed
// draws (with seed 1, the coordinator among them): the launcher reboots the same two.
TEST_F(NetnsTwinScenario, ATcpInstabilityRebootsTheSameTwoNodesInBothWorlds) {
  json s = ci_scenario("node-crash-replan");
  s["faults"] = json::array({{{"at_s", 1.0}, {"kind", "tcp-instability"}}});
  expect_twins_agree(s, "tcp-instability", {quick_boot("m3-ultra-256gb"), quick_boot("m3-ultra-512gb")}, "node-crash",
                     2);
}

// The RDMA stack fails under the rdma transport (softrdma's device on each
// veth): by default both worlds take the cables' IP down with it (whether a
// Mac's IP over Thunderbolt survives is unknown: docs/reference-facts.md#thunderbolt-instability),
// so the ranks see their ports go down where the simulator sees silence, and
// both move to the secondary network without losing a request.
TEST_F(NetnsTwinScenario, TheRdmaStackFailureUnderTheRdmaTransportAgrees) {
  SKIP_UNLESS_SOFTRDMA_BUILT();
  const std::string launched = expect_twins_agree(ci_scenario("rdma-failure-fallback"), "rdma-stack-failure-verbs", {},
                                                  "", 1, true);
  EXPECT_NE(launched.find("over rdma"), std::string::npos) << launched;
}

// The scenario's other choice: IP over the cables survives the stack. softrdma's
// devices fail and the veths stay up, so heartbeats go on in both worlds; the
// failed queue pairs are what both detect, and both move to the secondary
// network. Four requests at once keep it short.
TEST_F(NetnsTwinScenario, AnRdmaStackFailureThatIpSurvivesAgrees) {
  SKIP_UNLESS_SOFTRDMA_BUILT();
  json s = ci_scenario("rdma-failure-fallback");
  s["faults"][0]["ip_survives"] = true;
  s["workload"]["arrival"] = {{"type", "closed"}, {"concurrency", 4}};
  const std::string launched = expect_twins_agree(s, "rdma-stack-failure-ip", {}, "", 1, true);
  EXPECT_NE(launched.find("the veths stay up"), std::string::npos) << launched;
  EXPECT_NE(launched.find("recovered: moved to the secondary network (10gbe)"), std::string::npos) << launched;
}

// Under fallback, a live node cut off by every one of its cables is reached
// over the secondary network in both worlds, not taken for down.
TEST_F(NetnsTwinScenario, ANodeCutOffByEveryCableIsReachedOverTheSecondaryNetwork) {
  json s = ci_scenario("rdma-failure-fallback");
  s["faults"] = json::array();
  for (const char* cable : {"m1-m3", "m2-m3", "m3-m4"})
    s["faults"].push_back({{"at_s", 1.0}, {"kind", "link-down"}, {"target", cable}});
  const std::string launched = expect_twins_agree(s, "cut-off-fallback", {}, "link-down", 3);
  EXPECT_NE(launched.find("m3 was silent on every cable"), std::string::npos) << launched;
}

// Every fault scenario of scenarios/ci.
INSTANTIATE_TEST_SUITE_P(CiFaultScenarios, NetnsTwin,
                         testing::Values("node-crash-replan", "node-crash-fail-stop", "coordinator-crash",
                                         "node-hang-replan", "link-down-replan", "link-down-reroute", "node-slow",
                                         "rdma-failure-fallback"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
