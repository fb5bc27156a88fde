// Reports from a hand-built run of two nodes and three requests: every figure
// below is worked out by hand from the inputs in run().
#include "engine/report/report.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/base/build_info.hpp"
#include "engine/report/expectations.hpp"
#include "engine/report/markdown.hpp"
#include "engine/report/report_html.hpp"
#include "engine/report/timeline.hpp"
#include "engine/report/trace.hpp"

namespace engine {
namespace {

using nlohmann::json;
using testing::HasSubstr;
using testing::Not;

Scenario scenario() {
  Scenario s;
  s.file = "scenarios/two.json";
  s.name = "two-node";
  s.description = "hand-built";
  s.nodes = {{"m1", "m3-ultra-512gb"}, {"m2", "m3-ultra-512gb"}};
  s.fabric.type = engine::FabricType::kFullMesh;
  s.fabric.link = "tb5-rdma";
  s.fabric.cables = {Cable{0, 1, 1, 1, "tb5-rdma"}};
  s.model = "llama-3.1-8b";
  s.quant = "bf16";
  s.parallelism = engine::Strategy::kTensor;
  return s;
}

Plan plan() {
  Plan p;
  p.strategy = engine::Strategy::kTensor;
  p.kv_capacity_tokens = 1000;
  for (int i = 0; i < 2; ++i) {
    Shard sh;
    sh.node = i;
    sh.node_name = i == 0 ? "m1" : "m2";
    sh.hardware = "m3-ultra-512gb";
    sh.first_layer = 0;
    sh.end_layer = 32;
    sh.heads = 16;
    sh.kv_heads = 4;
    sh.ffn_fraction = sh.vocab_fraction = 0.5;
    sh.weight_bytes = 8e9;
    sh.memory_bytes = 100e9;
    sh.kv_bytes_per_token = 65536;
    p.shards.push_back(sh);
  }
  return p;
}

RequestRecord request(int id, double arrival, std::vector<double> tokens, int output, std::string error = "") {
  RequestRecord rec;
  rec.request = Request{id, 100, output, arrival};
  rec.arrival_s = arrival;
  rec.first_token_s = tokens.empty() ? -1 : tokens.front();
  rec.finish_s = error.empty() ? tokens.back() : -1;
  rec.token_times = std::move(tokens);
  rec.error = std::move(error);
  return rec;
}

RunResult run() {
  RunResult r;
  r.end_s = 4;
  // Decode: 6 tokens over 1.5 s of steps that carry decode -> 4 tok/s.
  // Prefill: 150 tokens over 1.5 s of steps that carry prefill -> 100 tok/s.
  r.steps = {{0, 1, 0, 100}, {1, 1.5, 2, 0}, {1.5, 2, 2, 50}, {2, 2.5, 2, 0}};
  // TTFT (completed only): 1.0, 1.5. ITL pooled: 0.5, 1.0 | 0.5 | 0.75.
  r.requests = {request(0, 0.0, {1.0, 1.5, 2.5}, 3), request(1, 0.5, {2.0, 2.5}, 2),
                request(2, 1.0, {1.5, 2.25}, 4, "peer 1 failed: link down")};
  r.nodes.resize(2);
  r.nodes[0].compute_s = 2;
  r.nodes[0].traffic = {.comm_s = 0.5, .bytes_to = {0, 1000}, .messages_to = {0, 10}};
  r.nodes[0].steps = {{0, 1, 0.8, 0.2, 100, {0, 600}}, {1, 1.5, 0.4, 0.1, 2, {0, 300}}};
  r.nodes[1].compute_s = 3;
  r.nodes[1].traffic = {.comm_s = 1.5, .bytes_to = {400, 0}, .messages_to = {4, 0}};
  r.nodes[1].steps = {{0, 1, 0.9, 0.1, 100, {}}};
  r.nodes[1].error = "peer 0 failed: link down";
  return r;
}

nlohmann::ordered_json report(const Scenario& s = scenario()) {
  return build_report(s, Catalog::builtin(), plan(), "meshinfer", run(), 7);
}

TEST(Report, TopLevelKeysInAFixedOrder) {
  const auto rep = report();
  std::vector<std::string> keys;
  for (const auto& [k, _] : rep.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "scenario", "build", "plan", "summary", "bottleneck", "nodes", "links",
                                            "link_cards", "requests", "timeline", "distributions", "events", "phases",
                                            "placements",
                                            "faults", "invariants", "expectations"}));
  EXPECT_EQ(rep["schema"], "meshinfer.report/1");
  EXPECT_EQ(rep["scenario"]["seed"], 7);
  EXPECT_EQ(rep["build"]["git"], engine::kGitCommit);
}

// A report says which card its timings came from: a probed card's figures differ from the catalog's.
TEST(Report, LinkCardsRecordTheFiguresOfEveryCardTheRunUsed) {
  const auto rep = report();
  const LinkCard& card = Catalog::builtin().link("tb5-rdma");
  ASSERT_EQ(rep["link_cards"].size(), 1u);
  EXPECT_EQ(rep["link_cards"][0]["name"], "tb5-rdma");
  EXPECT_DOUBLE_EQ(rep["link_cards"][0]["bandwidth_gbps"].get<double>(), card.bandwidth * 8 / 1e9);
  EXPECT_DOUBLE_EQ(rep["link_cards"][0]["latency_us"].get<double>(), card.latency_s * 1e6);
  EXPECT_EQ(rep["scenario"]["recovery"]["policy"], "fail-stop");
}

TEST(Report, SummaryFromStepsAndRequests) {
  const auto sum = report()["summary"];
  EXPECT_DOUBLE_EQ(sum["decode_tokens_per_s"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(sum["prefill_tokens_per_s"].get<double>(), 100.0);
  // Nearest rank of [1.0, 1.5]: p50 is the 1st value, p99 the 2nd.
  EXPECT_DOUBLE_EQ(sum["ttft_s"]["p50"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(sum["ttft_s"]["p99"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(sum["ttft_s"]["mean"].get<double>(), 1.25);
  // Sorted [0.5, 0.5, 0.75, 1.0]: p50 is the 2nd value, p99 the 4th.
  EXPECT_DOUBLE_EQ(sum["itl_s"]["p50"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(sum["itl_s"]["p99"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(sum["itl_s"]["mean"].get<double>(), 0.6875);
  // Request 0: 2 tokens in 1.5 s; request 1: 1 token in 0.5 s.
  EXPECT_DOUBLE_EQ(sum["per_request_decode_tokens_per_s"].get<double>(), (2 / 1.5 + 2.0) / 2);
  EXPECT_EQ(sum["requests"]["total"], 3);
  EXPECT_EQ(sum["requests"]["completed"], 2);
  EXPECT_EQ(sum["requests"]["failed"], 1);
  EXPECT_EQ(sum["output_tokens"], 7);
  EXPECT_DOUBLE_EQ(sum["simulated_s"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(sum["request_success"].get<double>(), 2.0 / 3);
  EXPECT_EQ(sum["uptime"], 1.0);  // no fault
}

// ci/node-crash-replan's shape: no request lost, yet 14.6 s of 21.8 s without service.
TEST(Report, UptimeCountsFromTheFaultToTheRecoveryNotTheRequestsLost) {
  RunResult r = run();
  r.end_s = 21.8;
  r.events = {{1.0, "node-crash", "m2", ""}, {1.25, "detected", "m2", ""}, {15.6, "recovered", "m2", ""}};
  const auto sum = build_report(scenario(), Catalog::builtin(), plan(), "meshinfer", r, 7)["summary"];
  EXPECT_NEAR(sum["out_of_service_s"].get<double>(), 14.6, 1e-12);
  EXPECT_NEAR(sum["uptime"].get<double>(), 1 - 14.6 / 21.8, 1e-12);
  EXPECT_DOUBLE_EQ(sum["request_success"].get<double>(), 2.0 / 3);
}

// report.md says what each fault did: applied when, detected when, what was
// decided, and the recovery time in the same words as every other output.
TEST(Report, MarkdownHasAFaultsSectionWithEachEventAndTheRecoveryTime) {
  RunResult r = run();
  r.end_s = 21.8;
  r.events = {{1.0, "node-crash", "m2", "power lost"},
              {1.25, "detected", "m2", "peer 1 failed: silent for more than 0.25 s"},
              {15.6, "recovered", "m2", "re-placed on 1 node(s) as tensor"}};
  const std::string md = render_markdown(build_report(scenario(), Catalog::builtin(), plan(), "meshinfer", r, 7));
  EXPECT_THAT(md, HasSubstr("\n## Faults and recovery\n\n1 fault applied; detected after 0.250 s; recovery time "
                            "14.600 s (serving again 14.350 s after the detection); 0 tokens recomputed.\n"));
  EXPECT_THAT(md, HasSubstr("| 1.000 | node-crash | m2 | power lost |"));
  EXPECT_THAT(md, HasSubstr("| 1.250 | detected | m2 | peer 1 failed: silent for more than 0.25 s |"));
  EXPECT_THAT(md, HasSubstr("| 15.600 | recovered | m2 | re-placed on 1 node(s) as tensor |"));
  EXPECT_THAT(render_markdown(report()), Not(HasSubstr("## Faults and recovery"))) << "no faults, no section";
}

// report.md's links say when a cable was down, in report.html's words; where
// every cable stayed up there is no such column.
TEST(Report, MarkdownLinksSayWhenACableWasDown) {
  Scenario s = scenario();
  FaultSpec pull;
  pull.kind = FaultKind::kLinkDown;
  pull.at_s = 1.0;
  pull.node = 0;
  pull.peer = 1;
  pull.target = "m1-m2";
  s.faults = {pull};
  const std::string md = render_markdown(build_report(s, Catalog::builtin(), plan(), "meshinfer", run(), 7));
  EXPECT_THAT(md, HasSubstr("| link | card | a→b MB | b→a MB | utilization | down |\n"));
  EXPECT_THAT(md, HasSubstr(" | down at 1.00 s |\n"));
  EXPECT_THAT(render_markdown(report()), HasSubstr("| link | card | a→b MB | b→a MB | utilization |\n"));
}

// What a recovery cost, side by side: serving before the first fault and after the recovery.
TEST(Report, FaultsCompareServingBeforeTheFaultWithAfterTheRecovery) {
  RunResult r = run();
  r.events = {{1.2, "link-down", "m1-m2", ""}, {1.3, "detected", "m2", ""}, {2.0, "recovered", "m2", ""}};
  const auto rep = build_report(scenario(), Catalog::builtin(), plan(), "meshinfer", r, 7);
  // Before 1.2 s only request 0's first token, at 1.0 s: 1 token over 1.2 s, no gap, TTFT 1.0 s.
  const auto& before = rep["faults"]["before"];
  EXPECT_DOUBLE_EQ(before["decode_tokens_per_s"].get<double>(), 1 / 1.2);
  EXPECT_TRUE(before["itl_p50_s"].is_null());
  EXPECT_DOUBLE_EQ(before["ttft_p50_s"].get<double>(), 1.0);
  // From 2.0 s to the end at 4 s: 4 tokens (2.5; 2.0, 2.5; 2.25), gaps 1.0, 0.5 and 0.75; request 1's TTFT 1.5 s.
  const auto& after = rep["faults"]["after"];
  EXPECT_DOUBLE_EQ(after["decode_tokens_per_s"].get<double>(), 4 / 2.0);
  EXPECT_DOUBLE_EQ(after["itl_p50_s"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(after["ttft_p50_s"].get<double>(), 1.5);
  EXPECT_THAT(render_markdown(rep), HasSubstr("| after the recovery | 2.000 | 4.000 | 2.000 | 750.000 | 1.500 |"));
  EXPECT_THAT(render_html(rep), HasSubstr("<tr class=\"after\"><td>after the recovery</td>"));
}

TEST(Report, AFaultDueAfterTheRunEndedIsNotApplied) {
  RunResult r = run();
  r.end_s = 4;
  r.events = {{500.0, "node-crash", "m2", ""}};
  const auto rep = build_report(scenario(), Catalog::builtin(), plan(), "meshinfer", r, 7);
  EXPECT_EQ(rep["faults"]["injected"], 0);
  EXPECT_EQ(rep["faults"]["not_applied"], 1);
  EXPECT_TRUE(rep["faults"]["time_to_detect_s"].is_null());
  EXPECT_FALSE(rep["summary"].contains("recovery_s"));
  EXPECT_EQ(rep["summary"]["uptime"], 1.0);
}

TEST(Report, AfterTheInstanceFailsNothingIsServed) {
  RunResult r = run();
  // A slow node detected nothing; the cable cut at 2 s ends the instance.
  r.events = {{0.5, "node-slow", "m1", ""},
              {2.0, "link-down", "m1-m2", ""},
              {2.25, "detected", "m2", ""},
              {2.3, "instance-failed", "m2", ""}};
  const auto sum = build_report(scenario(), Catalog::builtin(), plan(), "meshinfer", r, 7)["summary"];
  EXPECT_DOUBLE_EQ(sum["out_of_service_s"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(sum["uptime"].get<double>(), 0.5);
}

TEST(Report, EmptyRunHasZeroPercentiles) {
  RunResult empty;
  empty.nodes.resize(2);
  const auto sum = build_report(scenario(), Catalog::builtin(), plan(), "meshinfer", empty, 1)["summary"];
  EXPECT_EQ(sum["ttft_s"]["p99"], 0.0);
  EXPECT_EQ(sum["decode_tokens_per_s"], 0.0);
  EXPECT_EQ(sum["request_success"], 1.0);
  EXPECT_EQ(sum["uptime"], 1.0);
}

TEST(Report, PlanNodesAndRequests) {
  const auto rep = report();
  const auto& shard = rep["plan"]["nodes"][0];
  EXPECT_EQ(shard["layers"], json::parse("[0, 31]"));
  EXPECT_DOUBLE_EQ(shard["free_gb"].get<double>(), 92.0);

  const auto& n0 = rep["nodes"][0];
  EXPECT_DOUBLE_EQ(n0["idle_s"].get<double>(), 1.5);  // 4 - 2 - 0.5
  EXPECT_DOUBLE_EQ(n0["utilization"].get<double>(), 0.5);
  EXPECT_EQ(n0["bytes_sent"], 1000);
  EXPECT_EQ(n0["messages_sent"], 10);
  EXPECT_EQ(rep["nodes"][1]["idle_s"], 0.0);  // 4 - 3 - 1.5, floored
  EXPECT_EQ(rep["nodes"][1]["error"], "peer 0 failed: link down");

  const auto& failed = rep["requests"][2];
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_TRUE(failed["finish_s"].is_null());
  EXPECT_TRUE(failed["ttft_s"].is_null());
  EXPECT_EQ(failed["tokens"], 2);
  EXPECT_EQ(rep["requests"][1]["status"], "completed");
  EXPECT_DOUBLE_EQ(rep["requests"][1]["ttft_s"].get<double>(), 1.5);
}

TEST(Report, LinkBytesComeFromEachEndsTraffic) {
  const auto rep = report();
  const auto& link = rep["links"][0];
  EXPECT_EQ(link["a"], "m1");
  EXPECT_EQ(link["b"], "m2");
  EXPECT_EQ(link["link"], "tb5-rdma");
  EXPECT_EQ(link["bytes_a_to_b"], 1000);
  EXPECT_EQ(link["bytes_b_to_a"], 400);
  const double bandwidth = Catalog::builtin().link("tb5-rdma").bandwidth;
  EXPECT_DOUBLE_EQ(link["utilization"].get<double>(), 1000 / (bandwidth * 4));
}

double sum(const json& values) {
  double total = 0;
  for (const auto& v : values) total += v.get<double>();
  return total;
}

// 120 buckets over 4 s: 1/30 s each. Node m1's first step [0, 1) covers
// buckets 0-29, its second [1, 1.5) buckets 30-44.
TEST(Report, TimelineSpreadsStepsOverBuckets) {
  const auto tl = report()["timeline"];
  EXPECT_EQ(tl["buckets"], 120);
  EXPECT_DOUBLE_EQ(tl["bucket_s"].get<double>(), 4.0 / 120);
  const auto& m1 = tl["nodes"][0];
  EXPECT_EQ(m1["name"], "m1");
  ASSERT_EQ(m1["compute_s"].size(), 120u);
  EXPECT_NEAR(m1["compute_s"][0].get<double>(), 0.8 / 30, 1e-6);
  EXPECT_NEAR(m1["comm_s"][0].get<double>(), 0.2 / 30, 1e-6);
  EXPECT_NEAR(m1["idle_s"][0].get<double>(), 0, 1e-6);  // the step fills the bucket
  EXPECT_NEAR(m1["compute_s"][30].get<double>(), 0.4 / 15, 1e-6);
  EXPECT_NEAR(m1["idle_s"][30].get<double>(), 0, 1e-6);  // 0.4 + 0.1 s fill the 0.5 s step
  EXPECT_EQ(m1["compute_s"][45], 0.0);
  EXPECT_NEAR(m1["idle_s"][45].get<double>(), 1.0 / 30, 1e-6);
  // Each bucket is rounded to the microsecond: 45 buckets, up to 0.5 us each.
  EXPECT_NEAR(sum(m1["compute_s"]), 1.2, 45 * 0.5e-6);
  EXPECT_NEAR(sum(m1["comm_s"]), 0.3, 45 * 0.5e-6);

  const auto& link = tl["links"][0];
  EXPECT_EQ(link["a"], "m1");
  EXPECT_DOUBLE_EQ(link["bandwidth_bytes_per_s"].get<double>(), Catalog::builtin().link("tb5-rdma").bandwidth);
  EXPECT_EQ(link["bytes_a_to_b"][0], 20);   // 600 bytes over 30 buckets
  EXPECT_EQ(link["bytes_a_to_b"][30], 20);  // 300 over 15
  EXPECT_EQ(sum(link["bytes_a_to_b"]), 900);
  EXPECT_EQ(sum(link["bytes_b_to_a"]), 0);  // m2's step recorded no bytes

  // Tokens at 1.0, 1.5, 2.5 | 2.0, 2.5 | 1.5, 2.25: bucket 30 holds t = 1.0.
  EXPECT_EQ(tl["tokens"][30], 1);
  EXPECT_EQ(tl["tokens"][45], 2);
  EXPECT_EQ(sum(tl["tokens"]), 7);
}

// TTFT [1.0, 1.5] and ITL [0.5, 1.0, 0.5, 0.75]: a range of 0.5 in at most 20
// bins gives 0.025, rounded up to 0.05.
TEST(Report, DistributionsAreHistogramsOnRoundBins) {
  const auto d = report()["distributions"];
  EXPECT_DOUBLE_EQ(d["ttft_s"]["start"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(d["ttft_s"]["width"].get<double>(), 0.05);
  EXPECT_EQ(sum(d["ttft_s"]["counts"]), 2);
  EXPECT_EQ(d["ttft_s"]["counts"][0], 1);
  const auto& itl = d["itl_s"];
  EXPECT_DOUBLE_EQ(itl["start"].get<double>(), 0.5);
  EXPECT_EQ(itl["counts"][0], 2);
  EXPECT_EQ(itl["counts"][5], 1);
  EXPECT_EQ(sum(itl["counts"]), 4);
}

TEST(Report, EmptyRunHasEmptyHistograms) {
  RunResult empty;
  empty.nodes.resize(2);
  const auto rep = build_report(scenario(), Catalog::builtin(), plan(), "meshinfer", empty, 1);
  EXPECT_TRUE(rep["distributions"]["itl_s"]["counts"].empty());
  EXPECT_EQ(sum(rep["timeline"]["tokens"]), 0);
}

TEST(Report, NiceStepsAreOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_DOUBLE_EQ(nice_step(0.025), 0.05);
  EXPECT_DOUBLE_EQ(nice_step(0.2), 0.2);
  EXPECT_DOUBLE_EQ(nice_step(3), 5);
  EXPECT_DOUBLE_EQ(nice_step(7), 10);
  EXPECT_DOUBLE_EQ(nice_step(1200), 2000);
}

TEST(Report, ExpectationsPassFailAndBreach) {
  Scenario s = scenario();
  s.expectations = {{"decode_tokens_per_s", "min", 5, "/expect/decode_tokens_per_s/min"},
                    {"failed_requests", "max", 1, "/expect/failed_requests/max"},
                    {"completed_requests", "eq", 2, "/expect/completed_requests/eq"},
                    {"itl_p99_s", "max", 0.9, "/expect/itl_p99_s/max"},
                    {"recovery_s", "max", 30, "/expect/recovery_s/max"},
                    {"recovery_s", "max", 30, "/expect/recovery_s/max", /*may_be_absent=*/true}};
  auto rep = report(s);
  const auto results = check_expectations(s, rep);
  ASSERT_EQ(results.size(), 6u);
  EXPECT_FALSE(results[0].pass);
  EXPECT_DOUBLE_EQ(*results[0].value, 4.0);
  EXPECT_TRUE(results[1].pass);
  EXPECT_TRUE(results[2].pass);
  EXPECT_FALSE(results[3].pass);
  // Nothing recovered in this run: a bound on recovery_s was not exercised, and fails unless it may be absent.
  EXPECT_FALSE(results[4].pass);
  EXPECT_FALSE(results[4].value.has_value());
  EXPECT_THAT(describe_breach(results[4]), HasSubstr("recovery_s was not exercised"));
  EXPECT_TRUE(results[5].pass);
  EXPECT_EQ(rep["expectations"][4]["exercised"], false);
  EXPECT_TRUE(rep["expectations"][4]["value"].is_null());
  EXPECT_THAT(render_markdown(rep), HasSubstr("| recovery_s | <= 30.000 | not exercised | FAIL |"));
  EXPECT_EQ(describe_breach(results[0]),
            "expectation failed: decode_tokens_per_s = 4, must be >= 5 "
            "(scenarios/two.json /expect/decode_tokens_per_s/min)");
  EXPECT_EQ(describe_breach(results[3]),
            "expectation failed: itl_p99_s = 1, must be <= 0.9 (scenarios/two.json /expect/itl_p99_s/max)");
  EXPECT_EQ(rep["expectations"][0],
            nlohmann::ordered_json::parse(
                R"({"metric": "decode_tokens_per_s", "op": "min", "bound": 5.0, "value": 4.0, "exercised": true,
                    "pass": false})"));
}

TEST(Report, EveryScenarioMetricHasAPlaceInTheReport) {
  Scenario s = scenario();
  for (auto metric : kMetrics) s.expectations.push_back({std::string(metric), "max", 1e18, ""});
  auto rep = report(s);
  EXPECT_NO_THROW(check_expectations(s, rep));
}

TEST(Report, MarkdownHasEveryTable) {
  Scenario s = scenario();
  s.expectations = {{"decode_tokens_per_s", "min", 5, "/expect/decode_tokens_per_s/min"},
                    {"failed_requests", "max", 1, "/expect/failed_requests/max"}};
  auto rep = report(s);
  check_expectations(s, rep);
  const std::string md = render_markdown(rep);
  EXPECT_THAT(md, HasSubstr("# meshinfer: two-node"));
  EXPECT_THAT(md, HasSubstr("| decode throughput | 4.000 tok/s |"));
  EXPECT_THAT(md, HasSubstr("| ITL p50 / p99 / mean | 500.000 / 1000.000 / 687.500 ms |"));
  EXPECT_THAT(md, HasSubstr("| node | hardware | layers | heads | kv heads | experts | weights GB | free GB |"));
  EXPECT_THAT(md, HasSubstr("| m1 | m3-ultra-512gb | 0-31 | 16 | 4 | 0 | 8.000 | 92.000 |"));
  EXPECT_THAT(md, HasSubstr("| m1 | 2.000 | 0.500 | 1.500 | 50.0% | 0.001 |  |"));
  EXPECT_THAT(md, HasSubstr("| m1<->m2 | tb5-rdma | 0.001 | 0.000 |"));
  EXPECT_THAT(md, HasSubstr("| decode_tokens_per_s | >= 5.000 | 4.000 | FAIL |"));
  EXPECT_THAT(md, HasSubstr("| failed_requests | <= 1.000 | 1.000 | PASS |"));
}

int count(const json& events, const std::string& ph, const std::string& name, int pid) {
  return static_cast<int>(std::count_if(events.begin(), events.end(), [&](const json& e) {
    return e["ph"] == ph && e["name"] == name && e["pid"] == pid;
  }));
}

TEST(Report, TraceNamesEveryNodeAndLink) {
  const json trace = render_trace(scenario(), plan(), run());
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  const json& ev = trace["traceEvents"];
  EXPECT_EQ(count(ev, "M", "thread_name", 1), 2);   // nodes
  EXPECT_EQ(count(ev, "M", "thread_name", 2), 1);   // links
  EXPECT_EQ(count(ev, "M", "process_name", 3), 1);  // requests
  EXPECT_EQ(count(ev, "X", "step", 1), 3);
  EXPECT_EQ(count(ev, "X", "traffic (whole run)", 2), 1);
  const auto step = std::find_if(ev.begin(), ev.end(), [](const json& e) { return e["name"] == "step"; });
  EXPECT_DOUBLE_EQ((*step)["dur"].get<double>(), 1e6);
  EXPECT_DOUBLE_EQ((*step)["args"]["compute_ms"].get<double>(), 800);
  for (const char* ph : {"b", "e", "i"}) {
    EXPECT_EQ(std::count_if(ev.begin(), ev.end(), [&](const json& e) { return e["ph"] == ph; }), 3) << ph;
  }
  // The failed request's span ends at its last token.
  const auto end2 = std::find_if(ev.begin(), ev.end(), [](const json& e) { return e["ph"] == "e" && e["id"] == 2; });
  EXPECT_DOUBLE_EQ((*end2)["ts"].get<double>(), 2.25e6);
}

TEST(Report, Deterministic) {
  EXPECT_EQ(report().dump(2), report().dump(2));
  EXPECT_EQ(render_trace(scenario(), plan(), run()).dump(), render_trace(scenario(), plan(), run()).dump());
}

TEST(Report, WritesTheFourFiles) {
  const auto dir = std::filesystem::path(testing::TempDir()) / "meshinfer-report-test" / "nested";
  std::filesystem::remove_all(dir);
  const auto rep = report();
  write_reports(dir.string(), rep, render_trace(scenario(), plan(), run()));
  const auto read = [&](const char* name) {
    std::ifstream in(dir / name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  EXPECT_EQ(read("report.json"), rep.dump(2) + "\n");
  EXPECT_EQ(read("report.md"), render_markdown(rep));
  EXPECT_EQ(read("report.html"), render_html(rep));
  EXPECT_EQ(json::parse(read("trace.json")), render_trace(scenario(), plan(), run()));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace engine
