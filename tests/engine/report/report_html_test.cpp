// report.html from a hand-built report.json: three nodes in a triangle, four
// time buckets, two requests (one failed), two fault events and two phases.
#include "engine/report/report_html.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/html_dom.hpp"

namespace engine {
namespace {

using nlohmann::ordered_json;
using testing::HasSubstr;
using testing::Not;
using testsupport::attribute_values;
using testsupport::count;
using testsupport::figure;

ordered_json report() {
  return ordered_json::parse(R"json({
    "schema": "meshinfer.report/1",
    "scenario": {"name": "tri", "file": "scenarios/tri.json", "description": "a <b>bold</b> & \"quoted\" claim",
                 "seed": 42, "model": "llama-3.1-8b", "quant": "bf16", "parallelism": "tensor", "profile": "meshinfer",
                 "simulation_level": "flow"},
    "build": {"version": "0.1.0", "git": "abc123"},
    "plan": {"strategy": "tensor", "kv_capacity_tokens": 1000, "nodes": [
      {"rank": 0, "node": "a", "hardware": "m3-ultra-512gb", "weight_gb": 100, "memory_gb": 400},
      {"rank": 1, "node": "b", "hardware": "m3-ultra-512gb", "weight_gb": 100, "memory_gb": 400},
      {"rank": 2, "node": "c", "hardware": "m3-ultra-256gb", "weight_gb": 100, "memory_gb": 200}]},
    "summary": {"decode_tokens_per_s": 10, "prefill_tokens_per_s": 100, "per_request_decode_tokens_per_s": 10,
                "ttft_s": {"p50": 0.3, "p99": 0.5, "mean": 0.4}, "itl_s": {"p50": 0.1, "p99": 0.2, "mean": 0.15},
                "requests": {"total": 2, "completed": 1, "failed": 1}, "output_tokens": 6, "simulated_s": 2,
                "uptime": 0.25, "out_of_service_s": 1.5, "request_success": 0.5},
    "bottleneck": {
      "decode": {"node": "a", "token_s": 0.1, "weight_reads_s": 0.05, "arithmetic_s": 0, "dispatch_s": 0.02,
                 "collective_latency_s": 0.01, "collective_bandwidth_s": 0.005, "relay_s": 0.005, "waiting_s": 0.01,
                 "floor_s": 0.04, "tokens": 1, "nodes": [
        {"node": "a", "hardware": "m3-ultra-512gb", "token_s": 0.1, "weight_reads_s": 0.05, "arithmetic_s": 0,
         "dispatch_s": 0.02, "collective_latency_s": 0.01, "collective_bandwidth_s": 0.005, "relay_s": 0.005,
         "waiting_s": 0.01, "floor_s": 0.04, "tokens": 1},
        {"node": "b", "hardware": "m3-ultra-512gb", "token_s": 0.1, "weight_reads_s": 0.05, "arithmetic_s": 0,
         "dispatch_s": 0.02, "collective_latency_s": 0.01, "collective_bandwidth_s": 0.005, "relay_s": 0,
         "waiting_s": 0.015, "floor_s": 0.04, "tokens": 1}]},
      "prefill": null,
      "scaling": {"workload": "1 request of 10 prompt + 16 output tokens", "strategy": "tensor", "points": [
        {"nodes": 1, "hardware": ["m3-ultra-512gb"], "status": "dropped", "reason": "too big"},
        {"nodes": 2, "hardware": ["m3-ultra-512gb", "m3-ultra-512gb"], "status": "simulated",
         "decode_tokens_per_s": 5, "decode": {"node": "a", "token_s": 0.2, "weight_reads_s": 0.1, "arithmetic_s": 0,
         "dispatch_s": 0.02, "collective_latency_s": 0.01, "collective_bandwidth_s": 0.01, "relay_s": 0,
         "waiting_s": 0.06, "floor_s": 0.08, "tokens": 1}},
        {"nodes": 3, "hardware": ["m3-ultra-512gb", "m3-ultra-512gb", "m3-ultra-256gb"], "status": "simulated",
         "decode_tokens_per_s": 10, "speedup": 2, "limit": {"term": "dispatch_s", "name": "dispatch", "excess_s": 0.004},
         "decode": {"node": "a", "token_s": 0.1, "weight_reads_s": 0.05, "arithmetic_s": 0, "dispatch_s": 0.02,
         "collective_latency_s": 0.01, "collective_bandwidth_s": 0.005, "relay_s": 0.005, "waiting_s": 0.01,
         "floor_s": 0.04, "tokens": 1}}]}},
    "nodes": [
      {"rank": 0, "name": "a", "hardware": "m3-ultra-512gb", "compute_s": 1, "comm_s": 0.5, "idle_s": 0.5, "utilization": 0.5, "error": ""},
      {"rank": 1, "name": "b", "hardware": "m3-ultra-512gb", "compute_s": 1, "comm_s": 0.5, "idle_s": 0.5, "utilization": 0.5, "error": ""},
      {"rank": 2, "name": "c", "hardware": "m3-ultra-256gb", "compute_s": 0.5, "comm_s": 0.2, "idle_s": 1.3, "utilization": 0.25,
       "error": "peer 0 failed"}],
    "links": [
      {"a": "a", "b": "b", "link": "tb5-rdma", "utilization": 0.01},
      {"a": "a", "b": "c", "link": "tb5-rdma", "utilization": 0.02},
      {"a": "b", "b": "c", "link": "tb5-rdma", "utilization": 0.03}],
    "requests": [
      {"id": 0, "prompt_tokens": 10, "output_tokens": 4, "arrival_s": 0, "first_token_s": 0.3, "finish_s": 1.2,
       "ttft_s": 0.3, "tokens": 4, "status": "completed", "error": ""},
      {"id": 1, "prompt_tokens": 10, "output_tokens": 4, "arrival_s": 0.1, "first_token_s": 0.6, "finish_s": null,
       "ttft_s": null, "tokens": 2, "status": "failed", "error": "instance failed: link down"}],
    "timeline": {"buckets": 4, "bucket_s": 0.5,
      "nodes": [
        {"name": "a", "compute_s": [0.25, 0.25, 0.25, 0.25], "comm_s": [0.1, 0.1, 0.1, 0.2], "idle_s": [0.15, 0.15, 0.15, 0.05]},
        {"name": "b", "compute_s": [0.25, 0.25, 0.25, 0.25], "comm_s": [0.1, 0.1, 0.1, 0.2], "idle_s": [0.15, 0.15, 0.15, 0.05]},
        {"name": "c", "compute_s": [0.25, 0.25, 0, 0], "comm_s": [0.1, 0.1, 0, 0], "idle_s": [0.15, 0.15, 0.5, 0.5]}],
      "links": [
        {"a": "a", "b": "b", "link": "tb5-rdma", "bandwidth_bytes_per_s": 1000, "bytes_a_to_b": [10, 20, 0, 5], "bytes_b_to_a": [10, 0, 0, 0]},
        {"a": "a", "b": "c", "link": "tb5-rdma", "bandwidth_bytes_per_s": 1000, "bytes_a_to_b": [10, 20, 0, 5], "bytes_b_to_a": [10, 0, 0, 0]},
        {"a": "b", "b": "c", "link": "tb5-rdma", "bandwidth_bytes_per_s": 1000, "bytes_a_to_b": [10, 20, 0, 5], "bytes_b_to_a": [10, 0, 0, 0]}],
      "tokens": [1, 3, 2, 0]},
    "distributions": {"ttft_s": {"start": 0.3, "width": 0.1, "counts": [1]},
                      "itl_s": {"start": 0.1, "width": 0.05, "counts": [2, 0, 2]}},
    "events": [{"t_s": 0.75, "kind": "link-down", "target": "a-c", "detail": "scenario fault"},
               {"t_s": 1.25, "kind": "node-crash", "target": "c", "detail": "scenario fault"}],
    "phases": [{"kind": "detect", "target": "a-c", "start_s": 0.75, "end_s": 1.0},
               {"kind": "recover", "target": "", "start_s": 1.25, "end_s": null}],
    "expectations": [{"metric": "failed_requests", "op": "eq", "bound": 0, "value": 1, "pass": false},
                     {"metric": "decode_tokens_per_s", "op": "min", "bound": 5, "value": 10, "pass": true}]
  })json");
}

TEST(ReportHtml, OneLanePerNodeAndPerCable) {
  const std::string tl = figure(render_html(report()), "timeline");
  EXPECT_EQ(attribute_values(tl, "<g class=\"lane\" data-kind=\"node\"", "data-node"),
            (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(attribute_values(tl, "<g class=\"lane\" data-kind=\"link\"", "data-link"),
            (std::vector<std::string>{"a-b", "a-c", "b-c"}));
  // Bucket 3 of node a: 0.25 s compute of 0.5 s is half of the 34-unit lane.
  EXPECT_THAT(tl, HasSubstr("class=\"compute\" x=\"1022.5\" y=\""));
  EXPECT_THAT(tl, HasSubstr("height=\"17.0\""));
}

TEST(ReportHtml, ClusterDrawsNodesAndCablesWithUtilization) {
  const std::string cl = figure(render_html(report()), "cluster");
  EXPECT_EQ(count(cl, "<g class=\"node\""), 3);
  EXPECT_EQ(attribute_values(cl, "<line class=\"cable\"", "data-utilization"),
            (std::vector<std::string>{"0.01", "0.02", "0.03"}));
  EXPECT_THAT(cl, HasSubstr("tb5-rdma · 3.00%"));
  EXPECT_THAT(cl, HasSubstr("class=\"node-box failed\""));  // c reported an error
  EXPECT_THAT(cl, HasSubstr("data-weight-gb=\"100\" data-memory-gb=\"200\""));
}

// A cable that went down is drawn down from that moment, in its lane and in
// the cluster; one that came back is drawn up again, its label saying when.
TEST(ReportHtml, ACableDownIsDrawnDownFromThatMomentAndUpAgainWhenItCameBack) {
  auto rep = report();
  rep["links"][1]["down"] = ordered_json::parse(R"json([{"from_s": 0.75, "to_s": null}])json");
  rep["links"][2]["down"] = ordered_json::parse(R"json([{"from_s": 0.5, "to_s": 1.0}])json");
  const std::string html = render_html(rep);

  const std::string cl = figure(html, "cluster");
  EXPECT_EQ(attribute_values(cl, "<line class=\"cable\"", "data-state"),
            (std::vector<std::string>{"down", "restored"}));
  EXPECT_THAT(cl, HasSubstr("data-a=\"a\" data-b=\"c\" data-link=\"tb5-rdma\" data-utilization=\"0.02\" "
                            "data-state=\"down\" data-down=\"down at 0.75 s\""));
  EXPECT_THAT(cl, HasSubstr(">tb5-rdma · 3.00%</text><text class=\"cable-label down\" x=\""));
  EXPECT_THAT(cl, HasSubstr(">down 0.50–1.00 s</text>"));
  EXPECT_THAT(cl, HasSubstr(">tb5-rdma · 1.00%</text>"));  // a-b never went down

  const std::string tl = figure(html, "timeline");
  EXPECT_EQ(attribute_values(tl, "<rect class=\"link-down\"", "data-from"), (std::vector<std::string>{"0.75", "0.5"}));
  EXPECT_EQ(attribute_values(tl, "<rect class=\"link-down\"", "data-to"), (std::vector<std::string>{"", "1"}));
  // The 2 s run spans 1110 units from x = 190: down from 0.75 s (606.25) to the end (1300).
  EXPECT_THAT(tl, HasSubstr("<rect class=\"link-down\" x=\"606.3\" y=\"202.0\" width=\"693.7\""));
  EXPECT_THAT(tl, HasSubstr("<text class=\"down-label\" x=\"610.2\" y=\"215.0\" text-anchor=\"start\">"
                            "down at 0.75 s</text>"));
  EXPECT_THAT(tl, HasSubstr("<rect class=\"key link-down\""));  // in the legend
  const std::string healthy = figure(render_html(report()), "timeline");
  EXPECT_EQ(count(healthy, "<rect class=\"link-down\""), 0);
  EXPECT_THAT(healthy, Not(HasSubstr("key link-down")));
}

TEST(ReportHtml, ACrashedNodeIsMarkedAndThePlacementAfterRecoveryIsDrawn) {
  auto rep = report();
  EXPECT_THAT(render_html(rep), Not(HasSubstr("id=\"cluster-after\"")));
  rep["placements"] = ordered_json::parse(R"json([{"t_s": 1.6, "plan": {"strategy": "tensor-uneven", "nodes": [
      {"rank": 0, "node": "a", "hardware": "m3-ultra-512gb", "weight_gb": 150, "memory_gb": 400},
      {"rank": 1, "node": "b", "hardware": "m3-ultra-512gb", "weight_gb": 150, "memory_gb": 400}]}}])json");
  const std::string html = render_html(rep);
  EXPECT_THAT(figure(html, "cluster"), HasSubstr("data-fate=\"crashed at 1.25 s\""));
  const std::string after = figure(html, "cluster-after");
  EXPECT_THAT(after, HasSubstr("re-placement at 1.60 s: tensor-uneven plan"));
  EXPECT_EQ(attribute_values(after, "<rect class=\"mem-weights\"", "data-weight-gb"),
            (std::vector<std::string>{"150", "150"}));
  EXPECT_THAT(after, HasSubstr("crashed at 1.25 s · holds nothing"));
}

TEST(ReportHtml, UptimeAndRequestSuccessAreTwoTilesNamedForWhatTheyAre) {
  const std::string html = render_html(report());
  EXPECT_THAT(html, HasSubstr("data-key=\"uptime\"><div class=\"v\">25.0% <small></small></div>"
                              "<div class=\"k\">uptime: could serve (1.5 s out of service)</div>"));
  EXPECT_THAT(html, HasSubstr("data-key=\"request-success\"><div class=\"v\">50.0% <small></small></div>"));
  EXPECT_THAT(html, Not(HasSubstr("availability")));
}

TEST(ReportHtml, FaultMarkersAndPhasesAtTheirTimes) {
  const std::string html = render_html(report());
  for (const char* chart : {"timeline", "throughput"}) {
    const std::string fig = figure(html, chart);
    EXPECT_EQ(attribute_values(fig, "<line class=\"fault-marker\"", "data-t"),
              (std::vector<std::string>{"0.75", "1.25"}))
        << chart;
    EXPECT_EQ(attribute_values(fig, "<rect class=\"phase\"", "data-end"), (std::vector<std::string>{"1", "2"}))
        << chart << ": an open phase runs to the end of the run";
  }
  EXPECT_THAT(html, HasSubstr("data-kind=\"link-down\" data-target=\"a-c\""));
  EXPECT_EQ(count(html, "<tr class=\"event\">"), 2);
  EXPECT_EQ(count(html, "<tr class=\"phase-row\">"), 2);
}

TEST(ReportHtml, NoFaultsNoMarkers) {
  auto rep = report();
  rep.erase("events");
  rep.erase("phases");
  const std::string html = render_html(rep);
  EXPECT_EQ(count(html, "class=\"fault-marker\""), 0);
  EXPECT_EQ(count(html, "class=\"phase"), 0);
  EXPECT_THAT(html, Not(HasSubstr("id=\"events\"")));
}

TEST(ReportHtml, RequestsThroughputAndHistogramsCarryTheirData) {
  const std::string html = render_html(report());
  const std::string tl = figure(html, "timeline");
  EXPECT_EQ(attribute_values(tl, "<g class=\"request\"", "data-status"),
            (std::vector<std::string>{"completed", "failed"}));
  EXPECT_EQ(attribute_values(figure(html, "throughput"), "<rect class=\"tokens column\"", "data-tokens-per-s"),
            (std::vector<std::string>{"2", "6", "4"}));  // the empty bucket draws nothing
  EXPECT_EQ(attribute_values(figure(html, "itl"), "<rect class=\"bin\"", "data-count"),
            (std::vector<std::string>{"2", "2"}));
  EXPECT_EQ(attribute_values(figure(html, "itl"), "<line class=\"percentile\"", "data-value"),
            (std::vector<std::string>{"100", "200"}));  // in ms
}

TEST(ReportHtml, ADecodeTokenIsDrawnByItsTermsAndTheScalingViewSaysWhatStopsIt) {
  const std::string html = render_html(report());
  const std::string decode = figure(html, "decode-token");
  EXPECT_EQ(attribute_values(decode, "<g class=\"breakdown\"", "data-label"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(attribute_values(decode, "<g class=\"breakdown\"", "data-relay-ms"), (std::vector<std::string>{"5", "0"}));
  EXPECT_EQ(count(decode, "<line class=\"floor\""), 2);
  EXPECT_EQ(attribute_values(figure(html, "scaling"), "<g class=\"breakdown\"", "data-token-ms"),
            (std::vector<std::string>{"200", "100"}));  // the dropped count draws no bar
  EXPECT_THAT(html, HasSubstr("1 node: dropped: too big"));
  EXPECT_THAT(html, HasSubstr("3 nodes: x2.00, held back by dispatch (+4.00 ms past perfect scaling)"));
}

TEST(ReportHtml, ExpectationRowsPassAndFail) {
  const std::string html = render_html(report());
  EXPECT_EQ(attribute_values(html, "<tr class=\"expectation\"", "data-pass"),
            (std::vector<std::string>{"false", "true"}));
  EXPECT_THAT(html, HasSubstr(">FAIL</span>"));
  EXPECT_THAT(html, HasSubstr("<td>≥ 5</td>"));
}

TEST(ReportHtml, HeaderNamesScenarioSeedLevelAndBuild) {
  const std::string html = render_html(report());
  EXPECT_THAT(html, HasSubstr("<header data-scenario=\"tri\" data-seed=\"42\"><h1>tri</h1>"));
  EXPECT_THAT(html, HasSubstr("flow level"));
  EXPECT_THAT(html, HasSubstr("meshinfer 0.1.0 (abc123)"));
}

TEST(ReportHtml, TextIsEscaped) {
  const std::string html = render_html(report());
  EXPECT_THAT(html, Not(HasSubstr("<b>bold")));
  EXPECT_THAT(html, HasSubstr("a &lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot; claim"));
}

// Nothing in the page can fetch: no element or CSS construct that loads a resource.
TEST(ReportHtml, SelfContained) {
  const std::string html = render_html(report());
  for (const char* fetcher : {"<script", "<link", "<img", "<image", "<iframe", "<object", "<embed", "<use",
                              "src=", "href=", "url(", "@import", "http:", "https:", "//"}) {
    EXPECT_THAT(html, Not(HasSubstr(fetcher))) << fetcher;
  }
}

TEST(ReportHtml, EmptyRunDrawsWithoutNaN) {
  auto rep = report();
  rep["timeline"] =
      ordered_json::parse(R"({"buckets": 4, "bucket_s": 0, "nodes": [], "links": [], "tokens": [0, 0, 0, 0]})");
  rep["distributions"] = ordered_json::parse(
      R"({"ttft_s": {"start": 0, "width": 0, "counts": []}, "itl_s": {"start": 0, "width": 0, "counts": []}})");
  rep["summary"]["output_tokens"] = 0;
  rep["bottleneck"] = ordered_json::parse(R"({"decode": null, "prefill": null})");
  const std::string html = render_html(rep);
  EXPECT_THAT(html, Not(HasSubstr("nan")));
  EXPECT_THAT(html, Not(HasSubstr("inf\"")));
  EXPECT_THAT(html, HasSubstr("no values in this run"));
  EXPECT_THAT(html, HasSubstr("No step ran"));
}

}  // namespace
}  // namespace engine
