// Faults under each recovery policy, with outcomes derived from the cards.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/executor.hpp"
#include "engine/planner.hpp"
#include "engine/profile.hpp"
#include "engine/report.hpp"
#include "sim/isolated.hpp"
#include "sim/scenario_run.hpp"

namespace {

using engine::Catalog;
using json = nlohmann::ordered_json;

const std::string kCi = std::string(MESHINFER_SOURCE_DIR) + "/scenarios/ci/";

engine::Scenario load(const std::string& file) { return engine::load_scenario(kCi + file, Catalog::builtin()); }

// The whole report of a simulated scenario, built in a child process.
json simulate(const engine::Scenario& s) {
  const auto r = sim::run_isolated([&] {
    const auto& catalog = Catalog::builtin();
    const auto profile = engine::BackendProfile::load(catalog.dir(), s.profile);
    const auto plan = engine::make_plan(s, catalog, s.parallelism);
    const auto result = sim::simulate(s, catalog, plan, profile, engine::make_requests(s.workload, s.seed));
    return engine::build_report(s, catalog, plan, profile.name, result, s.seed).dump();
  });
  if (!r.ok) throw std::runtime_error(r.output);
  return json::parse(r.output);
}

double event_time(const json& report, const std::string& kind) {
  for (const auto& e : report["events"])
    if (e["kind"] == kind) return e["t_s"].get<double>();
  return -1;
}

TEST(Faults, ReplanAfterLosingA256GbNodeKeepsEveryRequestAndPaysTheReload) {
  const auto s = load("node-crash-replan.json");
  const json report = simulate(s);
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  for (const auto& r : report["requests"]) {
    EXPECT_EQ(r["status"], "completed") << r.dump();
    EXPECT_EQ(r["tokens"], r["output_tokens"]);
  }
  // The three survivors cannot split 64 heads evenly: the re-placement is
  // tensor-uneven, and each survivor reads its new shard from SSD.
  engine::Scenario survivors = s;
  survivors.nodes.pop_back();
  const auto plan = engine::make_plan(survivors, Catalog::builtin(), "tensor-uneven");
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
  const json report = simulate(s);
  const double detect = report["faults"]["time_to_detect_s"].get<double>();
  EXPECT_GE(detect, s.heartbeat_timeout_s);
  EXPECT_LE(detect, s.heartbeat_timeout_s + 2 * s.heartbeat_s);
}

TEST(Faults, FailStopEndsEveryRequestWithTheCause) {
  const json report = simulate(load("node-crash-fail-stop.json"));
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
  const json report = simulate(s);
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  for (const auto& r : report["requests"]) {
    EXPECT_EQ(r["status"], "failed");
    EXPECT_NE(r["error"].get<std::string>().find("cannot re-place"), std::string::npos) << r["error"];
  }
  EXPECT_GE(event_time(report, "instance-failed"), 0);
}

TEST(Faults, CoordinatorLossFailsOpenRequestsWithThatCause) {
  const json report = simulate(load("coordinator-crash.json"));
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  for (const auto& r : report["requests"]) EXPECT_EQ(r["status"], "failed");
  EXPECT_GE(event_time(report, "detected"), 1.0);
}

TEST(Faults, ThrottledNodeSlowsTensorParallelDecodeWithoutFailures) {
  const auto s = load("node-slow.json");
  engine::Scenario healthy = s;
  healthy.faults.clear();
  const json slow = simulate(s), fast = simulate(healthy);
  EXPECT_EQ(slow["summary"]["requests"]["failed"], 0);
  // Every block waits for the slowest member: much slower, but no more than the throttle itself.
  const double ratio = slow["summary"]["itl_s"]["p50"].get<double>() / fast["summary"]["itl_s"]["p50"].get<double>();
  EXPECT_GT(ratio, 1.3);
  EXPECT_LE(ratio, 1.0 / s.faults[0].factor + 0.01);
}

TEST(Faults, TooShortADeadlineIsAnInvariantViolation) {
  engine::Scenario s = load("decode-speed-floor.json");
  s.deadline_s = 0.5;
  const json report = simulate(s);
  ASSERT_FALSE(report["invariants"].empty());
  EXPECT_NE(report["invariants"][0].get<std::string>().find("deadline"), std::string::npos) << report["invariants"].dump();
}

}  // namespace

namespace {

TEST(Faults, RdmaStackFailureFallsBackToTheSecondaryNetworkAndLosesNoRequest) {
  const auto s = load("rdma-failure-fallback.json");
  const json report = simulate(s);
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  for (const auto& r : report["requests"]) EXPECT_EQ(r["status"], "completed") << r.dump();
  // Nothing is reloaded or recomputed: the same placement on a slower network.
  EXPECT_EQ(report["faults"]["tokens_recomputed"], 0);
  EXPECT_LT(report["faults"]["time_to_recover_s"].get<double>(), 2 * s.heartbeat_timeout_s);
  // 10 GbE is slower than Thunderbolt RDMA: decoding after the fallback is slower.
  engine::Scenario calm = s;
  calm.faults.clear();
  EXPECT_LT(report["summary"]["decode_tokens_per_s"].get<double>(),
            simulate(calm)["summary"]["decode_tokens_per_s"].get<double>());
}

TEST(Faults, RdmaStackFailureUnderFailStopDropsTheInstance) {
  engine::Scenario s = load("rdma-failure-fallback.json");
  s.recovery = "fail-stop";
  const json report = simulate(s);
  EXPECT_TRUE(report["invariants"].empty()) << report["invariants"].dump();
  EXPECT_EQ(report["summary"]["requests"]["completed"], 0);
}

}  // namespace
