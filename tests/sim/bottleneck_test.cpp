// The bottleneck a report explains: on shipped scenarios of each strategy, and
// one that reroutes around a pulled cable, the seven terms of a decode token
// add up to the ITL; the scaling view says what each added node buys.
#include "engine/report/bottleneck.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/input/scenario_file.hpp"
#include "sim/studies/scaling.hpp"
#include "support/simulated_report.hpp"

namespace {

using engine::Catalog;
using json = nlohmann::ordered_json;

const std::string kScenarios = std::string(MESHINFER_SOURCE_DIR) + "/scenarios/";

engine::Scenario load(const std::string& file) { return engine::load_scenario(kScenarios + file, Catalog::builtin()); }

using testsupport::simulated_report;

double sum_of_terms(const json& terms) {
  double sum = 0;
  for (const auto& t : engine::term_names()) sum += terms[t.key].get<double>();
  return sum;
}

// The decode token of every node adds up to the ITL p50, and the floor is below the compute.
void expect_terms_add_up_to_the_itl(const json& report) {
  const double itl = report["summary"]["itl_s"]["p50"];
  const auto& decode = report["bottleneck"]["decode"];
  ASSERT_FALSE(decode.is_null());
  EXPECT_NEAR(sum_of_terms(decode), itl, 0.01 * itl) << decode.dump();
  for (const auto& n : decode["nodes"]) {
    EXPECT_NEAR(sum_of_terms(n), n["token_s"].get<double>(), 1e-9) << n.dump();
    const double compute =
        n["weight_reads_s"].get<double>() + n["arithmetic_s"].get<double>() + n["dispatch_s"].get<double>();
    EXPECT_GT(n["floor_s"].get<double>(), 0) << n.dump();
    EXPECT_LT(n["floor_s"].get<double>(), compute) << n.dump();
  }
  const auto& prefill = report["bottleneck"]["prefill"];
  ASSERT_FALSE(prefill.is_null());
  EXPECT_NEAR(sum_of_terms(prefill), prefill["token_s"].get<double>(), 1e-9);
}

TEST(Bottleneck, TensorTermsAddUpToTheItl) {
  engine::Scenario s = load("default.json");
  s.workload.requests = 2;
  const json report = simulated_report(s);
  expect_terms_add_up_to_the_itl(report);
  // Every node launches every layer's kernels: dispatch, not the weights, is most of a token.
  const auto& d = report["bottleneck"]["decode"];
  EXPECT_GT(d["dispatch_s"].get<double>(), d["weight_reads_s"].get<double>());
  EXPECT_GT(d["collective_latency_s"].get<double>(), d["collective_bandwidth_s"].get<double>());
}

TEST(Bottleneck, ExpertTermsAddUpToTheItl) {
  engine::Scenario s = load("default.json");
  s.parallelism = engine::Strategy::kExpert;
  s.workload.requests = 2;
  expect_terms_add_up_to_the_itl(simulated_report(s));
}

TEST(Bottleneck, PipelineStagesWaitForEachOther) {
  engine::Scenario s = load("qwen3-235b-8bit-4node-pipeline.json");
  s.workload.requests = 2;
  const json report = simulated_report(s);
  expect_terms_add_up_to_the_itl(report);
  // One stage of four computes while the others wait: most of each node's token is waiting.
  for (const auto& n : report["bottleneck"]["decode"]["nodes"])
    EXPECT_GT(n["waiting_s"].get<double>(), 0.5 * n["token_s"].get<double>()) << n.dump();
}

TEST(Bottleneck, ARerouteShowsItsRelayHops) {
  const json report = simulated_report(load("ci/link-down-reroute.json"));
  expect_terms_add_up_to_the_itl(report);
  double relay = 0;
  for (const auto& n : report["bottleneck"]["decode"]["nodes"]) relay = std::max(relay, n["relay_s"].get<double>());
  EXPECT_GT(relay, 0) << "the cut cable's ends send through a relay after the reroute";
}

TEST(Bottleneck, ScalingViewSaysWhatEachNodeBuysAndWhatStopsIt) {
  const engine::Scenario s = load("default.json");
  const json view = sim::scaling_view(s, engine::Strategy::kTensor, Catalog::builtin(), 2);
  const auto& points = view["points"];
  ASSERT_EQ(points.size(), 3u);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    EXPECT_EQ(p["nodes"], 1 << i);
    ASSERT_EQ(p["status"], "simulated") << p.dump();
    EXPECT_NEAR(sum_of_terms(p["decode"]), p["decode"]["token_s"].get<double>(), 1e-9);
    if (i == 0) continue;
    EXPECT_GT(p["speedup"].get<double>(), 1);
    // The weights split across the nodes; each node's kernel launches do not.
    EXPECT_EQ(p["limit"]["term"], "dispatch_s") << p.dump();
  }
}

TEST(Bottleneck, ScalingViewSaysWhyAModelDoesNotFitOnFewerNodes) {
  const engine::Scenario s = load("kimi-k2-thinking-int4-2node.json");
  const json view = sim::scaling_view(s, s.parallelism.value(), Catalog::builtin(), 2);
  ASSERT_EQ(view["points"].size(), 2u);
  EXPECT_EQ(view["points"][0]["status"], "dropped");
  EXPECT_FALSE(view["points"][0]["reason"].get<std::string>().empty());
  EXPECT_EQ(view["points"][1]["status"], "simulated");
  EXPECT_FALSE(view["points"][1].contains("limit")) << "nothing simulated before it to compare with";
}

}  // namespace
