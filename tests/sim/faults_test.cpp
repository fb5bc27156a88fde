// Faults under each recovery policy, with outcomes derived from the cards.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/cards/model_math.hpp"
#include "engine/checkpoint/random_model.hpp"
#include "engine/faults/oracle.hpp"
#include "engine/faults/tcp_instability.hpp"
#include "engine/input/scenario_file.hpp"
#include "engine/node/run_result.hpp"
#include "engine/plan/planner.hpp"
#include "support/cli_runner.hpp"
#include "support/simulated_report.hpp"

namespace {

using engine::Catalog;
using json = nlohmann::ordered_json;

const std::string kCi = std::string(MESHINFER_SOURCE_DIR) + "/scenarios/ci/";

engine::Scenario load(const std::string& file) { return engine::load_scenario(kCi + file, Catalog::builtin()); }

using testsupport::simulated_report;

double event_time(const json& report, const std::string& kind) {
  for (const auto& e : report["events"])
    if (e["kind"] == kind) return e["t_s"].get<double>();
  return -1;
}

TEST(Faults, ReplanAfterLosingA256GbNodeKeepsEveryRequestAndPaysTheReload) {
  const auto s = load("node-crash-replan.json");
  const json report = simulated_report(s);
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  for (const auto& r : report["requests"]) {
    EXPECT_EQ(r["status"], "completed") << r.dump();
    EXPECT_EQ(r["tokens"], r["output_tokens"]);
  }
  // The three survivors cannot split 64 heads evenly: the re-placement is
  // tensor-uneven, and each survivor reads its new shard from SSD.
  engine::Scenario survivors = s;
  survivors.nodes.pop_back();
  const auto plan = engine::make_plan(survivors, Catalog::builtin(), engine::Strategy::kTensorUneven);
  double reload = 0;
  for (const auto& sh : plan.shards)
    reload = std::max(reload, sh.weight_bytes / Catalog::builtin().hardware(sh.hardware).ssd_read_bandwidth);
  const double recovery = report["faults"]["time_to_recover_s"].get<double>();
  EXPECT_GE(recovery, reload);
  EXPECT_LT(recovery, reload + 1.0);
  EXPECT_GT(report["faults"]["tokens_recomputed"].get<long>(), 0);
}

TEST(Faults, CrashIsDetectedWithinTheHeartbeatTimeout) {
  const auto s = load("node-crash-replan.json");
  const json report = simulated_report(s);
  const double detect = report["faults"]["time_to_detect_s"].get<double>();
  EXPECT_GE(detect, s.heartbeat_timeout_s);
  EXPECT_LE(detect, s.heartbeat_timeout_s + 2 * s.heartbeat_s);
}

TEST(Faults, FailStopEndsEveryRequestWithTheCause) {
  const json report = simulated_report(load("node-crash-fail-stop.json"));
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  for (const auto& r : report["requests"]) {
    EXPECT_EQ(r["status"], "failed");
    EXPECT_NE(r["error"].get<std::string>().find("instance failed"), std::string::npos) << r["error"];
  }
}

TEST(Faults, LosingA512GbNodeOfTwoNodeDeepSeekCannotBeReplannedAndFailsCleanly) {
  engine::Scenario s = load("node-crash-replan.json");
  s.nodes.resize(2);  // the two 512 GB machines
  s.fabric.cables.resize(1);
  s.model = "deepseek-v3.1";
  s.quant = "8bit";
  s.faults = {s.faults[0]};
  s.faults[0].target = "m2";
  s.faults[0].node = 1;
  // One 512 GB machine cannot hold DeepSeek-V3.1 8-bit: the cards say so.
  const auto& catalog = Catalog::builtin();
  const auto& m = catalog.model("deepseek-v3.1");
  const auto& hw = catalog.hardware("m3-ultra-512gb");
  ASSERT_GT(engine::weight_bytes(m, m.quant("8bit")), hw.memory_bytes * hw.usable_memory_fraction);
  const json report = simulated_report(s);
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  for (const auto& r : report["requests"]) {
    EXPECT_EQ(r["status"], "failed");
    EXPECT_NE(r["error"].get<std::string>().find("cannot re-place"), std::string::npos) << r["error"];
  }
  EXPECT_GE(event_time(report, "instance-failed"), 0);
}

TEST(Faults, CoordinatorLossFailsOpenRequestsWithThatCause) {
  const json report = simulated_report(load("coordinator-crash.json"));
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  for (const auto& r : report["requests"]) EXPECT_EQ(r["status"], "failed");
  EXPECT_GE(event_time(report, "detected"), 1.0);
}

TEST(Faults, ThrottledNodeSlowsTensorParallelDecodeWithoutFailures) {
  const auto s = load("node-slow.json");
  engine::Scenario healthy = s;
  healthy.faults.clear();
  const json slow = simulated_report(s), fast = simulated_report(healthy);
  EXPECT_EQ(slow["summary"]["requests"]["failed"], 0);
  // Every block waits for the slowest member: much slower, but no more than the throttle itself.
  const double ratio = slow["summary"]["itl_s"]["p50"].get<double>() / fast["summary"]["itl_s"]["p50"].get<double>();
  EXPECT_GT(ratio, 1.3);
  EXPECT_LE(ratio, 1.0 / s.faults[0].factor + 0.01);
}

TEST(Faults, TooShortADeadlineIsAnInvariantViolation) {
  engine::Scenario s = load("decode-speed-floor.json");
  s.deadline_s = 0.5;
  const json report = simulated_report(s);
  ASSERT_FALSE(report["invariants"].empty());
  EXPECT_NE(report["invariants"][0].get<std::string>().find("deadline"), std::string::npos)
      << report["invariants"].dump();
}

}  // namespace

namespace {

TEST(Faults, RdmaStackFailureFallsBackToTheSecondaryNetworkAndLosesNoRequest) {
  const auto s = load("rdma-failure-fallback.json");
  const json report = simulated_report(s);
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  for (const auto& r : report["requests"]) EXPECT_EQ(r["status"], "completed") << r.dump();
  // Nothing is reloaded or recomputed: the same placement on a slower network.
  EXPECT_EQ(report["faults"]["tokens_recomputed"], 0);
  EXPECT_LT(report["faults"]["time_to_recover_s"].get<double>(), 2 * s.heartbeat_timeout_s);
  // 10 GbE is slower than Thunderbolt RDMA: decoding after the fallback is slower.
  engine::Scenario calm = s;
  calm.faults.clear();
  EXPECT_LT(report["summary"]["decode_tokens_per_s"].get<double>(),
            simulated_report(calm)["summary"]["decode_tokens_per_s"].get<double>());
}

TEST(Faults, RdmaStackFailureUnderFailStopDropsTheInstance) {
  engine::Scenario s = load("rdma-failure-fallback.json");
  s.recovery = engine::RecoveryPolicy::kFailStop;
  const json report = simulated_report(s);
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  EXPECT_EQ(report["summary"]["requests"]["completed"], 0);
}

}  // namespace

namespace {

engine::Distribution fixed(int n) { return {"fixed", double(n), double(n), double(n)}; }

bool has_event(const json& report, const std::string& kind, const std::string& detail_part) {
  for (const auto& e : report["events"])
    if (e["kind"] == kind && e["detail"].get<std::string>().find(detail_part) != std::string::npos) return true;
  return false;
}

void expect_all(const json& report, const std::string& status, const std::string& error_part = "") {
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  for (const auto& r : report["requests"]) {
    EXPECT_EQ(r["status"], status) << r.dump();
    EXPECT_NE(r["error"].get<std::string>().find(error_part), std::string::npos) << r.dump();
  }
}

// One long request, so nearly every token interval comes after the fault.
engine::Scenario one_long_request(engine::Scenario s) {
  s.workload.requests = 1;
  s.workload.prompt_tokens = fixed(16);
  s.workload.output_tokens = fixed(120);
  return s;
}

// Collectives per decoded token in tensor parallel: two all-reduces per block, one gather of the sampled ids.
double collectives_per_token(const engine::Scenario& s) { return 2.0 * Catalog::builtin().model(s.model).layers + 1; }

// The cable a-b of `report`'s timeline and links: bytes both ways after `from_s`, and in the whole run.
struct CableBytes {
  double after = 0, total = 0;
};
CableBytes cable_bytes(const json& report, const std::string& a, const std::string& b, double from_s) {
  CableBytes c;
  const auto& t = report["timeline"];
  for (const auto& l : t["links"])
    if (l["a"] == a && l["b"] == b)
      for (int i = 0; i < t["buckets"].get<int>(); ++i)
        if (i * t["bucket_s"].get<double>() > from_s)
          c.after += l["bytes_a_to_b"][i].get<double>() + l["bytes_b_to_a"][i].get<double>();
  for (const auto& l : report["links"])
    if (l["a"] == a && l["b"] == b) c.total = l["bytes_a_to_b"].get<double>() + l["bytes_b_to_a"].get<double>();
  return c;
}

TEST(Faults, ReroutedCableKeepsEveryNodeCostsOneExtraHopPerCollectiveAndCarriesNothing) {
  engine::Scenario s = one_long_request(load("link-down-reroute.json"));
  s.faults[0].at_s = 0.5;
  engine::Scenario calm = s;
  calm.faults.clear();
  const json cut = simulated_report(s), whole = simulated_report(calm);
  expect_all(cut, "completed");
  EXPECT_TRUE(has_event(cut, "recovered", "rerouted m2-m3 through m1"));
  // No re-placement: nothing reloaded or recomputed, back within a heartbeat timeout of the detection.
  EXPECT_EQ(cut["faults"]["tokens_recomputed"], 0);
  EXPECT_LT(cut["faults"]["time_to_recover_s"].get<double>(), s.heartbeat_s);
  // The detoured message makes a second hop: the relay's overhead, the wire's
  // latency and the message again. Depending on where it falls in its sender's
  // order of sends, the collective ends later by at most that, at least that
  // less the sender's own overhead for the sends it no longer waits on.
  const auto& link = Catalog::builtin().link(s.fabric.link);
  const double message = Catalog::builtin().model(s.model).hidden * 2.0;
  const double hop = link.latency_s + message / link.bandwidth;
  const double extra = (cut["summary"]["itl_s"]["p50"].get<double>() - whole["summary"]["itl_s"]["p50"].get<double>()) /
                       collectives_per_token(s);
  EXPECT_GE(extra, hop - link.per_message_overhead_s);
  EXPECT_LE(extra, hop + link.per_message_overhead_s);
  // Its traffic is counted on the cables it crosses: after the reroute the cut
  // cable carries nothing, and the two cables of the detour carry its share too.
  const double recovered = event_time(cut, "recovered");
  EXPECT_EQ(cable_bytes(cut, "m2", "m3", recovered).after, 0) << "the cut cable after the reroute";
  EXPECT_LT(cable_bytes(cut, "m2", "m3", 0).total, 0.5 * cable_bytes(whole, "m2", "m3", 0).total);
  for (const char* end : {"m2", "m3"})  // the relay's two cables
    EXPECT_GT(cable_bytes(cut, "m1", end, recovered).after, 1.5 * cable_bytes(whole, "m1", end, recovered).after)
        << "m1-" << end;
}

TEST(Faults, RerouteCannotReplaceACrashedNodeAndSaysSo) {
  engine::Scenario s = load("node-crash-replan.json");
  s.recovery = engine::RecoveryPolicy::kReroute;
  expect_all(simulated_report(s), "failed", "is down (a detour only replaces a cable)");
}

// Chaos seed 710176 on this scenario: a node still following a detour through
// m2 after m2 died used to start the relay on the dead host, and SimGrid
// aborted the whole simulation ("Cannot start actor on failed host").
TEST(Faults, ADetourThroughANodeThatHasJustDiedEndsTheRunWithACauseNotAnAbort) {
  engine::Scenario s = load("link-down-reroute.json");
  s.workload.requests = 2;
  s.workload.output_tokens = fixed(16);
  engine::FaultSpec rdma, m2, m1;
  rdma.kind = engine::FaultKind::kRdmaStackFailure;
  rdma.at_s = 0.10014201403824119;
  m2.kind = m1.kind = engine::FaultKind::kNodeCrash;
  m2.at_s = 0.35949555305329906;
  m2.target = "m2";
  m2.node = 1;
  m1.at_s = 0.4194770040418439;
  m1.target = "m1";
  m1.node = 0;
  s.faults = {rdma, m2, m1};
  const json report = simulated_report(s);  // throws when the simulation itself died
  EXPECT_TRUE(has_event(report, "recovered", "through m2"));
  expect_all(report, "failed", "is down (a detour only replaces a cable)");
}

// Down 0.5 s of every second: silent past the heartbeat timeout, so detected and detoured.
TEST(Faults, FlappingCableUnderRerouteIsDetouredAndLosesNothing) {
  engine::Scenario s = load("link-down-reroute.json");
  s.faults[0].kind = engine::FaultKind::kLinkFlap;
  s.faults[0].period_s = 1.0;
  s.faults[0].duty = 0.5;
  s.faults[0].duration_s = 3;
  const json report = simulated_report(s);
  expect_all(report, "completed");
  EXPECT_TRUE(has_event(report, "recovered", "rerouted m2-m3"));
}

// Down 0.15 s of every 0.3 s: never silent for the timeout, so nobody is
// suspected; the messages each outage drops are sent again by running their
// step again (UC RDMA drops them without a word).
TEST(Faults, CableFlappingFasterThanTheTimeoutLosesNoRequestAndBlamesNoNode) {
  engine::Scenario s = load("link-down-reroute.json");
  s.faults[0].kind = engine::FaultKind::kLinkFlap;
  s.faults[0].period_s = 0.3;
  s.faults[0].duty = 0.5;
  s.faults[0].duration_s = 2;
  // A beat may be just missed before each outage: silent for up to the outage plus one heartbeat.
  ASSERT_LT(s.faults[0].duty * s.faults[0].period_s, s.heartbeat_timeout_s - s.heartbeat_s);
  const json report = simulated_report(s);
  expect_all(report, "completed");
  EXPECT_EQ(event_time(report, "detected"), -1) << report["events"].dump();
  EXPECT_GT(event_time(report, "step-rerun"), 0) << report["events"].dump();
}

// A crashed node is as silent on the cables as one cut off by all of them: the
// instance tries the secondary network, and stops with the cause when the node
// is silent there too.
TEST(Faults, FallbackDoesNotMistakeACrashedNodeForANetworkFailure) {
  engine::Scenario s = load("rdma-failure-fallback.json");
  s.faults[0] = {};
  s.faults[0].at_s = 1.0;
  s.faults[0].kind = engine::FaultKind::kNodeCrash;
  s.faults[0].target = "m3";
  s.faults[0].node = 2;
  const json report = simulated_report(s);
  expect_all(report, "failed", "m3 is down (another network cannot bring it back)");
  EXPECT_TRUE(has_event(report, "recovered", "m3 was silent on every cable")) << report["events"].dump();
  EXPECT_LE(event_time(report, "instance-failed"), s.faults[0].at_s + 2 * (s.heartbeat_timeout_s + 3 * s.heartbeat_s))
      << report["events"].dump();
}

TEST(Faults, ClientRetriesTheRequestsAReplanCutOffUnderTheirIds) {
  const json report = simulated_report(load("node-crash-replan.json"));
  expect_all(report, "completed");
  int retried = 0;
  for (const auto& r : report["requests"]) {
    EXPECT_EQ(r["tokens"], r["output_tokens"]) << "a retry resumes: no token twice, none missing";
    retried += r["tries"].get<int>() > 1;
  }
  EXPECT_GT(retried, 0);
  EXPECT_EQ(report["summary"]["requests"]["retried"], retried);
}

TEST(Faults, AClientOutOfTriesGivesUpWithTheRecoveryAsTheCause) {
  engine::Scenario s = load("node-crash-replan.json");
  s.workload.max_tries = 1;
  const json report = simulated_report(s);
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  int gave_up = 0;
  for (const auto& r : report["requests"])
    if (r["status"] == "failed") {
      EXPECT_NE(r["error"].get<std::string>().find("the client gave up after 1 tries: peer"), std::string::npos)
          << r.dump();
      ++gave_up;
    }
  EXPECT_GT(gave_up, 0);
  EXPECT_LT(gave_up, static_cast<int>(report["requests"].size())) << "requests not yet running are unaffected";
}

TEST(Faults, DegradedCableSlowsEveryCollectiveByItsAddedLatency) {
  engine::Scenario s = one_long_request(load("link-down-reroute.json"));
  s.faults[0].kind = engine::FaultKind::kLinkDegrade;
  s.faults[0].at_s = 0.1;
  s.faults[0].factor = 0.5;
  s.faults[0].added_latency_s = 100e-6;
  engine::Scenario calm = s;
  calm.faults.clear();
  const json slow = simulated_report(s), fast = simulated_report(calm);
  expect_all(slow, "completed");
  EXPECT_EQ(slow["faults"]["time_to_detect_s"], nullptr) << "a slower cable is not a failure";
  const auto& link = Catalog::builtin().link(s.fabric.link);
  const double message = Catalog::builtin().model(s.model).hidden * 2.0;
  const double extra = (slow["summary"]["itl_s"]["p50"].get<double>() - fast["summary"]["itl_s"]["p50"].get<double>()) /
                       collectives_per_token(s);
  EXPECT_GE(extra, s.faults[0].added_latency_s - 2 * link.per_message_overhead_s);
  EXPECT_LE(extra, s.faults[0].added_latency_s + message / (s.faults[0].factor * link.bandwidth));
}

TEST(Faults, RestartedNodeIsReplacedAndStaysOutOfTheInstance) {
  engine::Scenario s = load("node-crash-replan.json");
  s.faults[0].kind = engine::FaultKind::kNodeRestart;
  const json report = simulated_report(s);
  expect_all(report, "completed");
  EXPECT_TRUE(has_event(report, "recovered", "re-placed on 3 node(s)"));
  EXPECT_TRUE(has_event(report, "node-up", "not running until the cluster re-admits it"));
}

// Packet loss is softrdma's, on real processes: `run` and `chaos` refuse it, saying where and why.
TEST(Faults, PacketLossIsRefusedBySimulationWithTheFileThePathAndTheReason) {
  const std::string dir = testsupport::fresh_dir("sim-packet-loss");
  json s = json::parse(testsupport::read_file(kCi + "link-down-replan.json"));
  s.erase("$schema");
  s["faults"] = json::array({{{"at_s", 1}, {"kind", "rdma-packet-loss"}, {"target", "m2-m3"}, {"loss", 0.01}}});
  const std::string file = dir + "/loss.json";
  std::ofstream(file) << s.dump(2);
  const auto run = testsupport::run_cli("run --quiet " + file + " --out " + dir + "/out");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find(file + ": /faults/0/kind: rdma-packet-loss is not simulated"), std::string::npos)
      << run.output;
  const auto chaos =
      testsupport::run_cli("chaos " + kCi + "link-down-replan.json --seeds 1..1 --faults rdma-packet-loss");
  EXPECT_NE(chaos.exit_code, 0);
  EXPECT_NE(chaos.output.find("not simulated, so chaos cannot draw it"), std::string::npos) << chaos.output;
}

// TCP over Thunderbolt reboots two machines: whether the rest can serve follows from the cards.
TEST(Faults, TcpInstabilityRebootsTwoNodesAndTheOutcomeFollowsFromTheSurvivors) {
  engine::Scenario s = load("node-crash-replan.json");
  s.fabric.link = "tb5-tcp";
  for (auto& c : s.fabric.cables) c.link = "tb5-tcp";
  s.faults[0] = {};
  s.faults[0].at_s = 1.0;
  s.faults[0].kind = engine::FaultKind::kTcpInstability;
  const json report = simulated_report(s);
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  std::vector<int> survivors{0, 1, 2, 3}, rebooted;
  for (const auto& e : report["events"])
    if (e["kind"] == "node-crash") {
      EXPECT_NE(e["detail"].get<std::string>().find("kernel panic"), std::string::npos);
      rebooted.push_back(s.node_index(e["target"].get<std::string>()));
      std::erase(survivors, rebooted.back());
    }
  ASSERT_EQ(survivors.size(), 2u);
  // The draw launch --netns makes for the same scenario.
  std::vector<int> drawn = engine::tcp_instability_reboots(s, s.faults[0]);
  std::sort(drawn.begin(), drawn.end());
  std::sort(rebooted.begin(), rebooted.end());
  EXPECT_EQ(rebooted, drawn);
  if (std::find(survivors.begin(), survivors.end(), 0) == survivors.end()) {
    expect_all(report, "failed");  // the coordinator rebooted: the instance is gone
    return;
  }
  engine::Scenario rest = s;
  rest.nodes = {s.nodes[survivors[0]], s.nodes[survivors[1]]};
  rest.fabric.cables = {engine::Cable{0, 1, 1, 1, "tb5-tcp"}};
  bool fits = false;
  for (engine::Strategy strategy : engine::all_of<engine::Strategy>()) {
    try {
      engine::make_plan(rest, Catalog::builtin(), strategy);
      fits = true;
    } catch (const engine::PlanError&) {
    }
  }
  expect_all(report, fits ? "completed" : "failed");
}

}  // namespace

namespace {

TEST(Faults, HungNodeIsReplacedAndLeavesQuietlyWhenItAnswersAgain) {
  const json report = simulated_report(load("node-hang-replan.json"));
  expect_all(report, "completed");
  const double resumed = event_time(report, "node-resumed");
  ASSERT_GT(resumed, 0);
  // Back from the hang, it hears the coordinator's decision (it is no longer a
  // member) and leaves: nobody is detected lost after that.
  for (const auto& e : report["events"])
    if (e["kind"] == "detected") {
      EXPECT_LT(e["t_s"].get<double>(), resumed) << e.dump();
    }
  for (const auto& n : report["nodes"]) EXPECT_EQ(n["error"], "") << n.dump();
}

}  // namespace

namespace {

// Chaos seeds 1942, 3158, 7073 and eight more: a second hang began before the
// first ended, and the node never answered again, so the run hit its deadline.
TEST(Faults, OverlappingHangsEndWhenTheLastOneDoes) {
  engine::Scenario s = load("node-hang-replan.json");
  s.faults.push_back(s.faults[0]);
  s.faults[0].duration_s = 2;  // 1.0 .. 3.0
  s.faults[1].at_s = 2;        // 2.0 .. 4.0: outlasts the first
  s.faults[1].duration_s = 2;
  const json report = simulated_report(s);
  expect_all(report, "completed");
  int resumed = 0;
  for (const auto& e : report["events"])
    if (e["kind"] == "node-resumed") {
      ++resumed;
      EXPECT_DOUBLE_EQ(e["t_s"].get<double>(), 4.0);
    }
  EXPECT_EQ(resumed, 1);
}

}  // namespace

namespace {

// What `meshinfer chaos FILE --seeds SEED..SEED --requests 2 --output-tokens 16`
// runs for SEED, from the fault schedule the campaign printed for it.
engine::Scenario chaos_seed(const std::string& file, unsigned long long seed, const std::string& faults) {
  json j = json::parse(testsupport::read_file(kCi + file));
  j["faults"] = json::parse(faults);
  engine::Scenario s = engine::parse_scenario(j.dump(), kCi + file, Catalog::builtin());
  s.seed = seed;
  s.workload.requests = 2;
  s.workload.output_tokens = fixed(16);
  return s;
}

// The report, checked by the invariants and by the oracle, which knows only the schedule.
json simulate_and_judge(const engine::Scenario& s) {
  const json report = simulated_report(s);  // throws when the simulation itself died
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  const auto verdicts = engine::judge_run(s, Catalog::builtin(), report);
  EXPECT_TRUE(verdicts.empty()) << json(verdicts).dump() << "\nevents: " << report["events"].dump();
  return report;
}

// Chaos seed 244: m2 died while m4's messages to it went through a relay
// (their cable had been down); the relay forwarded one to the dead host and
// SimGrid aborted the whole run (CommImpl::start asserts both ends are on).
TEST(Faults, ARelayDropsWhatItHoldsForANodeThatDiedInsteadOfAbortingTheRun) {
  const json report = simulate_and_judge(
      chaos_seed("link-down-reroute.json", 244,
                 R"([{"at_s":0.3275228194885649,"kind":"link-down","target":"m2-m4","duration_s":0.30070900532374323},
          {"at_s":0.9694651545292315,"kind":"node-crash","target":"m2"}])"));
  EXPECT_TRUE(has_event(report, "recovered", "rerouted m2-m4 through"));
  expect_all(report, "failed", "m2 is down (a detour only replaces a cable)");
}

// Chaos seed 259: the coordinator hung, m2 restarted (off for its boot), and
// a detour to m2 set up meanwhile forwarded to the host while it was off:
// the same abort.
TEST(Faults, ADetourToANodeThatIsRebootingDoesNotAbortTheRun) {
  const json report = simulate_and_judge(
      chaos_seed("link-down-reroute.json", 259,
                 R"([{"at_s":0.5435410134161238,"kind":"node-hang","target":"m1","duration_s":0.4418268743181414},
          {"at_s":0.845661582621519,"kind":"link-down","target":"m1-m3","duration_s":0.17455653362818357},
          {"at_s":0.8992865234977535,"kind":"node-restart","target":"m2"}])"));
  EXPECT_TRUE(has_event(report, "recovered", "rerouted m1-m2 through"));
  EXPECT_TRUE(has_event(report, "instance-failed", "is down (a detour only replaces a cable)"));
}

}  // namespace

namespace {

// Chaos seed 7 (every policy has seeds like it): a cable down for less than
// the heartbeat timeout dropped a collective's message; nobody was silent, so
// nothing was detected, and the step waited out its 30 s progress timeout,
// after which a healthy node was blamed. Now the coordinator sees every
// member waiting on another and runs the step again.
TEST(Faults, AMessageLostToAShortCableOutageIsSentAgainWithinTheHeartbeatBound) {
  const engine::Scenario s = chaos_seed("node-crash-replan.json", 7,
                                        R"([{"at_s":0.16861347336445381,"kind":"link-down","target":"m1-m2",
                                             "duration_s":0.1721402865514877}])");
  const json report = simulate_and_judge(s);
  expect_all(report, "completed");
  EXPECT_EQ(event_time(report, "detected"), -1) << report["events"].dump();
  const double back = s.faults[0].at_s + s.faults[0].duration_s;
  EXPECT_LE(event_time(report, "step-rerun"), back + s.heartbeat_timeout_s + 3 * s.heartbeat_s)
      << report["events"].dump();
}

// Chaos seeds 252 and 267 (every policy): a flapping cable to the coordinator
// dropped its decision of a step rerun; the member, never told, waited in the
// old epoch while the others waited on it, until the 30 s progress timeout
// blamed a healthy node. A member left in an older epoch now counts as
// stalled, and the rerun is decided again. (That next decision shows the
// member the gap in the coordinator's numbers and is dropped with the broken
// connection, as on the verbs transport; the one after it gets through.)
TEST(Faults, AStepRerunWhoseDecisionIsLostIsDecidedAgain) {
  for (const auto& [seed, faults] : std::vector<std::pair<int, std::string>>{
           {252, R"([{"at_s":0.24375689508541004,"kind":"link-down","target":"m1-m2","duration_s":0.16649780249607699},
          {"at_s":0.3533444990419044,"kind":"link-flap","target":"m1-m3","duration_s":0.6170443402439476,
           "period_s":0.11683662288818714,"duty":0.4875328167347003},
          {"at_s":0.7274621820967903,"kind":"link-degrade","target":"m1-m4","duration_s":0.34762478893632853,
           "factor":0.6659184531301465,"added_latency_s":0.00027497364897941846}])"},
           {267, R"([{"at_s":0.8851722119752353,"kind":"link-flap","target":"m1-m4","duration_s":0.4140789182988416,
           "period_s":0.06844272999405931,"duty":0.2093343871161776}])"}}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const json report = simulate_and_judge(chaos_seed("node-crash-replan.json", seed, faults));
    expect_all(report, "completed");
    EXPECT_EQ(event_time(report, "detected"), -1) << report["events"].dump();
    ASSERT_TRUE(report.contains("sequences")) << report["events"].dump();
    EXPECT_EQ(report["sequences"][0]["from"], "m1");
  }
}

// Chaos seeds 111, 163 and 202: the coordinator's own cable to a node died,
// and the coordinator sent its reroute decision down that dead cable before
// setting up the detour; the node, hearing nothing, left, and was then taken
// for a crashed one. The decision now takes the detour, and a node that still
// hears others who hear the coordinator waits a timeout for it.
TEST(Faults, ANodeCutOffFromTheCoordinatorByOneCableIsReroutedNotDroppedAsCrashed) {
  for (const auto& [seed, faults] : std::vector<std::pair<int, std::string>>{
           {111, R"([{"at_s":0.881474329979213,"kind":"link-down","target":"m1-m3","duration_s":0.3570649237367286}])"},
           {163,
            R"([{"at_s":0.4001551477578878,"kind":"link-down","target":"m1-m3","duration_s":0.4406787317588503}])"},
           {202,
            R"([{"at_s":0.7348970691595091,"kind":"link-down","target":"m1-m2","duration_s":0.5013407992979555}])"}}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const json report = simulate_and_judge(chaos_seed("link-down-reroute.json", seed, faults));
    expect_all(report, "completed");
    EXPECT_TRUE(has_event(report, "recovered", "rerouted m1-")) << report["events"].dump();
  }
}

// Chaos seeds 76, 112 and 177: after the RDMA stack failed, the coordinator
// moved to the secondary network and at once took a node it had not yet heard
// there (it had been silent on the dead fabric) for a crashed one. Every peer
// now gets a fresh timeout on the new network, as a detour gives one.
TEST(Faults, FallbackAfterAnRdmaStackFailureKeepsEveryNode) {
  for (const auto& [seed, at] : std::vector<std::pair<int, std::string>>{
           {76, "0.7407548482416711"}, {112, "0.07134205804176087"}, {177, "0.6358516847786654"}}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const json report = simulate_and_judge(
        chaos_seed("rdma-failure-fallback.json", seed, R"([{"at_s":)" + at + R"(,"kind":"rdma-stack-failure"}])"));
    expect_all(report, "completed");
    EXPECT_TRUE(has_event(report, "recovered", "moved to the secondary network")) << report["events"].dump();
  }
}

// Where a scenario says IP over the Thunderbolt ports survives the RDMA stack,
// heartbeats over the cables go on: the engines learn of the failure from
// their queue pairs at once, not from a silence, nobody is taken for down, and
// fallback moves the instance to the secondary network as before.
TEST(Faults, WhereIpSurvivesTheRdmaStackItsFailedQueuePairsAreDetectedAtOnceAndNoNodeFallsSilent) {
  engine::Scenario s = load("rdma-failure-fallback.json");
  s.faults[0].ip_survives = true;
  const json report = simulated_report(s);
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  expect_all(report, "completed");
  EXPECT_LT(report["faults"]["time_to_detect_s"].get<double>(), s.heartbeat_timeout_s);
  EXPECT_TRUE(has_event(report, "detected", "RDMA queue pair failed")) << report["events"].dump();
  EXPECT_FALSE(has_event(report, "detected", "silent")) << report["events"].dump();
  EXPECT_TRUE(has_event(report, "recovered", "moved to the secondary network (10gbe)")) << report["events"].dump();
  EXPECT_FALSE(has_event(report, "recovered", "silent on every cable")) << report["events"].dump();
}

}  // namespace

namespace {

// Chaos seed 225 of fallback: m1-m3 flapped from 0.464 s, and the RDMA stack
// failed at 0.503 s, in between two of its down phases. The flap's next up
// phase turned m1-m3 back on, so the coordinator heard m3 but not m4, took m4
// for down and refused the fallback. Only a restart of every node brings an
// RDMA cable back: the flap cannot, and the instance moves to 10 GbE.
TEST(Faults, ACableFlappingWhenTheRdmaStackFailsStaysDeadAndTheInstanceFallsBack) {
  const json report = simulate_and_judge(
      chaos_seed("rdma-failure-fallback.json", 225,
                 R"([{"at_s":0.46425887261418547,"kind":"link-flap","target":"m1-m3","duration_s":0.34238205931016963,
           "period_s":0.29661954459568357,"duty":0.5550392314142355},
          {"at_s":0.5031769159609739,"kind":"rdma-stack-failure"},
          {"at_s":0.9680057644248335,"kind":"node-hang","target":"m3","duration_s":0.5515780094141276}])"));
  EXPECT_TRUE(has_event(report, "recovered", "moved to the secondary network")) << report["events"].dump();
  EXPECT_FALSE(has_event(report, "instance-failed", "m4 is down")) << report["events"].dump();
}

// A flap inside a longer link-down of the same cable: the cable comes back
// when the link-down ends (0.4 s, past the timeout: a detour), not at the
// flap's first up phase (0.1 s down, under the timeout: nothing to detect).
TEST(Faults, ACableHeldDownByTwoFaultsComesBackWhenTheLastEnds) {
  engine::Scenario s = one_long_request(load("link-down-reroute.json"));
  s.faults = {s.faults[0], s.faults[0]};
  s.faults[0].at_s = 0.5;
  s.faults[0].duration_s = 0.4;
  s.faults[1].kind = engine::FaultKind::kLinkFlap;
  s.faults[1].at_s = 0.55;
  s.faults[1].duration_s = 0.12;  // one period: down 0.55 .. 0.6
  s.faults[1].period_s = 0.1;
  s.faults[1].duty = 0.5;
  ASSERT_GT(s.faults[0].duration_s, s.heartbeat_timeout_s);
  ASSERT_LT(s.faults[1].at_s + s.faults[1].duty * s.faults[1].period_s - s.faults[0].at_s, s.heartbeat_timeout_s);
  const json report = simulate_and_judge(s);
  expect_all(report, "completed");
  EXPECT_TRUE(has_event(report, "recovered", "rerouted m2-m3 through")) << report["events"].dump();
}

}  // namespace

namespace {

// Every cable of m3 goes down, m3 itself runs on. On Thunderbolt alone it is
// as silent as a crashed node (nobody hears it, the others hear each other),
// and the instance failed "m3 is down", though the 10 GbE network beside the
// cables still reaches it. Under fallback only that network can tell the two
// apart, so the instance moves to it and m3 is heard there.
TEST(Faults, FallbackReachesANodeCutOffByEveryCableOverTheSecondaryNetwork) {
  engine::Scenario s = one_long_request(load("rdma-failure-fallback.json"));
  s.faults.clear();
  for (int peer : {0, 1, 3}) {
    engine::FaultSpec f;
    f.kind = engine::FaultKind::kLinkDown;
    f.at_s = 0.5;
    f.node = 2;
    f.peer = peer;
    f.target = s.nodes[peer].name + "-m3";
    s.faults.push_back(f);
  }
  const json report = simulate_and_judge(s);
  expect_all(report, "completed");
  EXPECT_TRUE(has_event(report, "recovered", "moved to the secondary network")) << report["events"].dump();
}

}  // namespace

namespace {

// Nothing is detected, and no step is run again, without a silence longer than
// the heartbeat timeout: not in a calm run, nor while a node runs at a fifth of
// its speed (the slowest the chaos campaigns draw). A slowed node computes
// slower, but its heartbeats keep their period: it stays within the margin.
TEST(Faults, NothingIsDetectedWithoutASilenceLongerThanTheTimeout) {
  for (const std::string faults :
       {"[]", R"([{"at_s":0.1,"kind":"node-slow","target":"m3","factor":0.2,"duration_s":5}])"}) {
    SCOPED_TRACE(faults);
    const json report = simulate_and_judge(chaos_seed("node-crash-replan.json", 1, faults));
    expect_all(report, "completed");
    EXPECT_EQ(event_time(report, "detected"), -1) << report["events"].dump();
    EXPECT_EQ(event_time(report, "step-rerun"), -1) << report["events"].dump();
  }
}

// A client retry resumes a cut-off request where it was. With real weights (the
// tiny model, placed as a pipeline so that re-placing it on the survivors
// changes the order of no sum), a run that loses m3 mid-decode and retries
// completes every request with exactly the calm run's token ids: none twice,
// none skipped, none computed from a wrong cache.
TEST(Faults, ARetriedRequestProducesEachOfTheCalmRunsTokensExactlyOnce) {
  const std::string model = testsupport::fresh_dir("retry-tokens") + "/tiny";
  engine::write_random_model(model, engine::tiny_model_config(), 1);
  json j = json::parse(testsupport::read_file(kCi + "node-crash-replan.json"));
  j.erase("expect");
  j["model"] = {{"path", model}};
  j["parallelism"] = "pipeline";
  j["workload"] = {{"requests", 2}, {"prompt_tokens", 16}, {"output_tokens", 64}};
  j["faults"] = json::array();
  engine::Scenario s = engine::parse_scenario(j.dump(), kCi + "node-crash-replan.json", Catalog::builtin());
  const json calm = simulated_report(s);
  expect_all(calm, "completed");
  const json& first = calm["requests"][0];
  engine::FaultSpec crash;
  crash.kind = engine::FaultKind::kNodeCrash;
  crash.target = "m3";
  crash.node = 2;
  crash.at_s = (first["first_token_s"].get<double>() + first["finish_s"].get<double>()) / 2;  // mid-decode
  s.faults = {crash};
  const json cut = simulated_report(s);
  expect_all(cut, "completed");
  ASSERT_TRUE(has_event(cut, "recovered", "re-placed on 3 node(s)")) << cut["events"].dump();
  int retried = 0;
  for (std::size_t i = 0; i < cut["requests"].size(); ++i) {
    retried += cut["requests"][i]["tries"].get<int>() > 1;
    ASSERT_EQ(calm["requests"][i]["output_ids"].size(), 64u) << "request " << i;
    EXPECT_EQ(cut["requests"][i]["output_ids"], calm["requests"][i]["output_ids"]) << "request " << i;
  }
  EXPECT_GT(retried, 0) << "no request was cut off and retried: the crash missed the decode";
}

// A cable down for less than the heartbeat timeout drops a step's messages
// mid-decode; the same members run the step again in a new epoch, whose
// backend is new. It resumes on the KV caches the earlier steps filled: with
// real weights every request ends with the calm run's tokens. (Each epoch's
// backend used to start with empty caches, and every node stopped with "KV
// cache shorter than the step's context".)
TEST(Faults, AStepRunAgainResumesOnTheCachedContextAndGivesTheCalmRunsTokens) {
  const std::string model = testsupport::fresh_dir("rerun-tokens") + "/tiny";
  engine::write_random_model(model, engine::tiny_model_config(), 1);
  json j = json::parse(testsupport::read_file(kCi + "link-down-reroute.json"));
  j.erase("expect");
  j["model"] = {{"path", model}};
  j["workload"] = {{"requests", 2}, {"prompt_tokens", 16}, {"output_tokens", 64}};
  engine::Scenario s = engine::parse_scenario(j.dump(), kCi + "link-down-reroute.json", Catalog::builtin());
  engine::FaultSpec cut = s.faults.at(0);  // link-down m2-m3
  s.faults.clear();
  const json calm = simulated_report(s);
  expect_all(calm, "completed");
  cut.at_s = calm["requests"][0]["first_token_s"].get<double>();
  cut.duration_s = 0.15;
  ASSERT_LT(cut.duration_s, s.heartbeat_timeout_s - s.heartbeat_s);
  s.faults = {cut};
  const json rerun = simulated_report(s);
  expect_all(rerun, "completed");
  EXPECT_GT(event_time(rerun, "step-rerun"), 0) << rerun["events"].dump();
  for (std::size_t i = 0; i < rerun["requests"].size(); ++i) {
    ASSERT_EQ(calm["requests"][i]["output_ids"].size(), 64u) << "request " << i;
    EXPECT_EQ(rerun["requests"][i]["output_ids"], calm["requests"][i]["output_ids"]) << "request " << i;
  }
}

// ci/node-hang-replan's netns twin, on the card probed on its mesh (40 Mbit/s,
// 45 us): m2, left out of the instance, resumes after five silent seconds and
// computes on for a moment before it learns so. Its backend's caches are its
// own, so m3, at m2's old rank in the new epoch, keeps its context: nobody else
// is detected, and every request ends with the calm run's tokens. (With one
// cache per rank across epochs, m2 cut m3's short and m3 was taken for failed.)
TEST(Faults, ANodeLeftOutThatResumesLeavesTheSurvivorsCachesAlone) {
  const std::string model = testsupport::fresh_dir("resumed-caches") + "/tiny";
  engine::write_random_model(model, engine::tiny_model_config(), 1);
  json j = json::parse(testsupport::read_file(kCi + "node-hang-replan.json"));
  j.erase("expect");
  j["model"] = {{"path", model}};
  j["workload"] = {{"requests", 4}, {"prompt_tokens", 16}, {"output_tokens", 400}};
  j["recovery"] = {{"policy", "replan"}, {"heartbeat_s", 0.1}, {"heartbeat_timeout_s", 0.5}};  // as real processes
  engine::Scenario s = engine::parse_scenario(j.dump(), kCi + "node-hang-replan.json", Catalog::builtin());
  engine::LinkCard probed = Catalog::builtin().link(s.fabric.link);
  probed.bandwidth = 0.0395869791497855e9 / 8;
  probed.latency_s = 44.569e-6;
  probed.per_message_overhead_s = 0;
  probed.frame_bytes = 1500;
  const std::vector<engine::FaultSpec> hang = s.faults;  // m2 silent from 1 s to 6 s
  s.faults.clear();
  const json calm = simulated_report(s, {probed});
  expect_all(calm, "completed");
  s.faults = hang;
  const json resumed = simulated_report(s, {probed});
  expect_all(resumed, "completed");
  int detected = 0;
  for (const auto& e : resumed["events"]) detected += e["kind"] == "detected";
  EXPECT_EQ(detected, 1) << resumed["events"].dump();
  for (const auto& node : resumed["nodes"]) EXPECT_EQ(node["error"], "") << node.dump();
  for (std::size_t i = 0; i < resumed["requests"].size(); ++i)
    EXPECT_EQ(resumed["requests"][i]["output_ids"], calm["requests"][i]["output_ids"]) << "request " << i;
}

}  // namespace
