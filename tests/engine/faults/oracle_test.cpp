// The oracle on hand-made runs: ones it must flag (false suspicion, an
// unjustified give-up, late detection, a token twice) and ones it must pass.
#include "engine/faults/oracle.hpp"
#include "engine/input/scenario_file.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using engine::Catalog;
using json = nlohmann::ordered_json;

const std::string kScenarios = std::string(MESHINFER_SOURCE_DIR) + "/scenarios/";

// m1, m2 (512 GB) and m3, m4 (256 GB) in a full mesh, holding Qwen3-235B 8-bit;
// heartbeats every 0.05 s, timeout 0.25 s.
engine::Scenario four_nodes(engine::RecoveryPolicy policy, std::vector<engine::FaultSpec> faults) {
  engine::Scenario s = engine::load_scenario(kScenarios + "ci/link-down-reroute.json", Catalog::builtin());
  s.recovery = policy;
  s.faults = std::move(faults);
  return s;
}

engine::FaultSpec fault(engine::FaultKind kind, double at, const engine::Scenario& s, const std::string& target,
                        double duration = 0) {
  engine::FaultSpec f;
  f.kind = kind;
  f.at_s = at;
  f.target = target;
  f.duration_s = duration;
  const auto dash = target.find('-');
  f.node = s.node_index(target.substr(0, dash));
  if (dash != std::string::npos) f.peer = s.node_index(target.substr(dash + 1));
  return f;
}

json request(int id, const std::string& status, int tokens, double finish = -1, const std::string& error = "") {
  return {{"id", id},         {"output_tokens", 16}, {"finish_s", finish >= 0 ? json(finish) : json(nullptr)},
          {"tokens", tokens}, {"status", status},    {"error", error}};
}

json event(double t, const std::string& kind, const std::string& target) {
  return {{"t_s", t}, {"kind", kind}, {"target", target}, {"detail", ""}};
}

json run(double end, std::vector<json> requests, std::vector<json> events) {
  return {{"summary", {{"simulated_s", end}}}, {"requests", requests}, {"events", events}};
}

std::vector<std::string> judge(const engine::Scenario& s, const json& report) {
  return engine::judge_run(s, Catalog::builtin(), report);
}

bool mentions(const std::vector<std::string>& verdicts, const std::string& what) {
  for (const auto& v : verdicts)
    if (v.find(what) != std::string::npos) return true;
  return false;
}

const std::string kInstanceFailed = "instance failed: m2 silent (policy ...)";

TEST(Oracle, ACalmRunThatDetectsAFailureIsAFalseSuspicion) {
  const auto s = four_nodes(engine::RecoveryPolicy::kReplan, {});
  const auto v = judge(s, run(5, {request(0, "completed", 16, 5)}, {event(2, "detected", "m3")}));
  EXPECT_TRUE(mentions(v, "false suspicion")) << testing::PrintToString(v);
}

TEST(Oracle, AHangShorterThanTheTimeoutJustifiesNoDetection) {
  auto s = four_nodes(engine::RecoveryPolicy::kReplan, {});
  s.faults = {fault(engine::FaultKind::kNodeHang, 1, s, "m3", 0.1)};
  const auto v = judge(s, run(5, {request(0, "completed", 16, 5)}, {event(1.2, "detected", "m3")}));
  EXPECT_TRUE(mentions(v, "false suspicion")) << testing::PrintToString(v);
}

TEST(Oracle, AThrottledNodeJustifiesNoDetectionNorFailure) {
  auto s = four_nodes(engine::RecoveryPolicy::kFailStop, {});
  s.faults = {fault(engine::FaultKind::kNodeSlow, 1, s, "m2", 2)};
  s.faults[0].factor = 0.3;
  const auto v = judge(s, run(5, {request(0, "failed", 3, -1, kInstanceFailed)},
                              {event(1.4, "detected", "m2"), event(1.4, "instance-failed", "m2")}));
  EXPECT_TRUE(mentions(v, "false suspicion")) << testing::PrintToString(v);
  EXPECT_TRUE(mentions(v, "does not justify")) << testing::PrintToString(v);
}

TEST(Oracle, DetectingANodeNoOutageTouchedIsAWrongSuspect) {
  auto s = four_nodes(engine::RecoveryPolicy::kReplan, {});
  s.faults = {fault(engine::FaultKind::kLinkDown, 1, s, "m2-m3")};
  const auto blamed_m4 =
      judge(s, run(5, {request(0, "completed", 16, 5)}, {event(1.3, "detected", "m4"), event(1.3, "recovered", "m4")}));
  EXPECT_TRUE(mentions(blamed_m4, "wrong suspect: m4 detected at 1.300 s")) << testing::PrintToString(blamed_m4);
  const auto blamed_m3 =
      judge(s, run(5, {request(0, "completed", 16, 5)}, {event(1.3, "detected", "m3"), event(1.3, "recovered", "m3")}));
  EXPECT_TRUE(blamed_m3.empty()) << testing::PrintToString(blamed_m3);
}

TEST(Oracle, RerouteGivingUpOnACableAThirdLiveNodeCanBridgeIsUnjustified) {
  auto s = four_nodes(engine::RecoveryPolicy::kReroute, {});
  s.faults = {fault(engine::FaultKind::kLinkDown, 1, s, "m2-m3")};
  const auto v = judge(s, run(2, {request(0, "failed", 4, -1, kInstanceFailed)},
                              {event(1.3, "detected", "m2"), event(1.3, "instance-failed", "m2")}));
  EXPECT_TRUE(mentions(v, "does not justify")) << testing::PrintToString(v);
}

TEST(Oracle, RerouteGivingUpOnACrashedNodeIsJustified) {
  auto s = four_nodes(engine::RecoveryPolicy::kReroute, {});
  s.faults = {fault(engine::FaultKind::kNodeCrash, 1, s, "m2")};
  const auto v = judge(s, run(2, {request(0, "failed", 4, -1, kInstanceFailed)},
                              {event(1.3, "detected", "m2"), event(1.3, "instance-failed", "m2")}));
  EXPECT_TRUE(v.empty()) << testing::PrintToString(v);
}

TEST(Oracle, ReplanGivingUpWhileTheSurvivorsHoldTheModelIsUnjustified) {
  auto s = four_nodes(engine::RecoveryPolicy::kReplan, {});
  s.faults = {fault(engine::FaultKind::kNodeCrash, 1, s, "m4")};  // 512 + 512 + 256 GB hold 235 GB of weights
  const auto v = judge(s, run(2, {request(0, "failed", 4, -1, kInstanceFailed)},
                              {event(1.3, "detected", "m4"), event(1.3, "instance-failed", "m4")}));
  EXPECT_TRUE(mentions(v, "does not justify")) << testing::PrintToString(v);
}

TEST(Oracle, ReplanGivingUpWhenTheSurvivorCannotHoldTheModelIsJustified) {
  // DeepSeek-V3.1 8-bit (~671 GB) needs both 512 GB nodes.
  auto s = engine::load_scenario(kScenarios + "deepseek-v3.1-8bit-2node.json", Catalog::builtin());
  s.recovery = engine::RecoveryPolicy::kReplan;
  s.faults = {fault(engine::FaultKind::kNodeCrash, 1, s, s.nodes[1].name)};
  const auto v = judge(s, run(2, {request(0, "failed", 4, -1, kInstanceFailed)},
                              {event(1.3, "detected", s.nodes[1].name), event(1.3, "instance-failed", "")}));
  EXPECT_TRUE(v.empty()) << testing::PrintToString(v);
}

TEST(Oracle, FallbackGivingUpOverADeadCableIsUnjustified) {
  auto s = engine::load_scenario(kScenarios + "ci/rdma-failure-fallback.json", Catalog::builtin());
  s.faults = {fault(engine::FaultKind::kLinkDown, 1, s, s.nodes[0].name + "-" + s.nodes[1].name)};
  const auto v = judge(s, run(2, {request(0, "failed", 4, -1, kInstanceFailed)},
                              {event(1.3, "detected", s.nodes[1].name), event(1.3, "instance-failed", "")}));
  EXPECT_TRUE(mentions(v, "does not justify")) << testing::PrintToString(v);
}

TEST(Oracle, ACrashNoticedOnlyAfterTheHeartbeatBoundIsLateDetection) {
  auto s = four_nodes(engine::RecoveryPolicy::kReplan, {});
  s.faults = {fault(engine::FaultKind::kNodeCrash, 1, s, "m3")};
  const auto v = judge(s, run(6, {request(0, "completed", 16, 6)}, {event(2, "detected", "m3")}));
  EXPECT_TRUE(mentions(v, "late detection")) << testing::PrintToString(v);
}

TEST(Oracle, ACrashDetectedInTimeAndReplannedPasses) {
  auto s = four_nodes(engine::RecoveryPolicy::kReplan, {});
  s.faults = {fault(engine::FaultKind::kNodeCrash, 1, s, "m3")};
  // Silence counts from m3's last heartbeat, at most one beat before the crash: due by 1 + 0.25 + 3 x 0.05.
  const auto v = judge(s, run(6, {request(0, "completed", 16, 6), request(1, "completed", 16, 5.5)},
                              {event(1.28, "detected", "m3"), event(1.28, "recovered", "m3")}));
  EXPECT_TRUE(v.empty()) << testing::PrintToString(v);
}

TEST(Oracle, ACrashAfterARecoveryIsHeldToTheHeartbeatBoundToo) {
  auto s = four_nodes(engine::RecoveryPolicy::kReroute, {});
  s.faults = {fault(engine::FaultKind::kLinkDown, 1, s, "m2-m3"), fault(engine::FaultKind::kNodeCrash, 3, s, "m4")};
  const std::vector<json> rerouted = {event(1.3, "detected", "m2"), event(1.3, "recovered", "m2")};
  auto late = rerouted, in_time = rerouted;
  late.push_back(event(4, "detected", "m4"));
  in_time.push_back(event(3.3, "detected", "m4"));
  const auto v = judge(s, run(6, {request(0, "completed", 16, 6)}, late));
  EXPECT_TRUE(mentions(v, "late detection: node-crash m4 at 3.000 s")) << testing::PrintToString(v);
  const auto ok = judge(s, run(6, {request(0, "completed", 16, 6)}, in_time));
  EXPECT_TRUE(ok.empty()) << testing::PrintToString(ok);
}

TEST(Oracle, ACrashDuringARecoveryIsNotHeldToTheBound) {
  auto s = four_nodes(engine::RecoveryPolicy::kReplan, {});
  s.faults = {fault(engine::FaultKind::kNodeCrash, 1, s, "m3"), fault(engine::FaultKind::kNodeCrash, 3, s, "m4")};
  // m3's re-placement reloads weights until 15 s: m4's loss is noticed after it.
  const auto v = judge(s, run(30, {request(0, "completed", 16, 30)},
                              {event(1.28, "detected", "m3"), event(15, "recovered", "m3"),
                               event(15.1, "detected", "m4"), event(20, "recovered", "m4")}));
  EXPECT_TRUE(v.empty()) << testing::PrintToString(v);
}

TEST(Oracle, ACompletedRequestWithATokenTwiceIsFlagged) {
  const auto s = four_nodes(engine::RecoveryPolicy::kReplan, {});
  const auto v = judge(s, run(5, {request(0, "completed", 17, 5)}, {}));
  EXPECT_TRUE(mentions(v, "produced twice or never")) << testing::PrintToString(v);
}

json sequence(const std::string& from, const std::string& to, int taken, int numbered, double gap_s = -1) {
  return {{"from", from},
          {"to", to},
          {"taken", taken},
          {"numbered", numbered},
          {"gap_s", gap_s >= 0 ? json(gap_s) : json(nullptr)}};
}

json with_sequences(json report, std::vector<json> sequences) {
  report["sequences"] = std::move(sequences);
  return report;
}

// A flap far shorter than the timeout dropped m2's message 4 to m3, and m3
// took message 5 in its place: nothing was detected and every request
// completed, but the real transports would have failed m2 at the gap.
TEST(Oracle, ARunThatTookAMessageInPlaceOfALostOneIsFlagged) {
  auto s = four_nodes(engine::RecoveryPolicy::kReplan, {});
  s.faults = {fault(engine::FaultKind::kLinkDown, 1, s, "m2-m3", 0.01)};
  const json calm_looking = run(5, {request(0, "completed", 16, 5)}, {});
  EXPECT_TRUE(judge(s, calm_looking).empty());
  const auto v = judge(s, with_sequences(calm_looking, {sequence("m2", "m3", 120, 121)}));
  EXPECT_TRUE(mentions(v, "stand-in: m3 took 120 messages from m2 numbered up to 121")) << testing::PrintToString(v);
}

// The same loss, found as a gap: m3 fails m2, and under fail-stop the instance
// ends. The short outage justifies that detection and failure from the gap on.
TEST(Oracle, AMessageLostToAShortOutageJustifiesDetectingItsSenderFromTheGapOn) {
  auto s = four_nodes(engine::RecoveryPolicy::kFailStop, {});
  s.faults = {fault(engine::FaultKind::kLinkDown, 1, s, "m2-m3", 0.01)};
  const json failed = run(1.2, {request(0, "failed", 3, -1, kInstanceFailed)},
                          {event(1.1, "detected", "m2"), event(1.1, "instance-failed", "m2")});
  EXPECT_TRUE(mentions(judge(s, failed), "false suspicion"));
  EXPECT_TRUE(judge(s, with_sequences(failed, {sequence("m2", "m3", 4, 4, 1.05)})).empty());
  // Not before the gap was found, and not on a bystander's word.
  EXPECT_TRUE(mentions(judge(s, with_sequences(failed, {sequence("m2", "m3", 4, 4, 1.15)})), "false suspicion"));
  json bystander = with_sequences(failed, {sequence("m2", "m3", 4, 4, 1.05)});
  bystander["events"][0]["target"] = "m4";
  EXPECT_TRUE(mentions(judge(s, bystander), "wrong suspect"));
}

TEST(Oracle, AMessageLostWithNoCableOutageToExplainItIsFlagged) {
  auto s = four_nodes(engine::RecoveryPolicy::kReplan, {});
  s.faults = {fault(engine::FaultKind::kNodeSlow, 1, s, "m2", 2)};
  s.faults[0].factor = 0.3;
  const auto v =
      judge(s, with_sequences(run(5, {request(0, "completed", 16, 5)}, {}), {sequence("m2", "m3", 4, 4, 1.5)}));
  EXPECT_TRUE(mentions(v, "lost message: m3 found a message from m2 lost at 1.500 s")) << testing::PrintToString(v);
}

}  // namespace
