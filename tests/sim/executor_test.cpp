// Simulated step times against the cost model and link cards, computed here
// from the cards (not pasted from a previous run).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "engine/cost_model.hpp"
#include "engine/planner.hpp"
#include "engine/profile.hpp"
#include "sim/isolated.hpp"
#include "sim/scenario_run.hpp"

namespace {

using engine::Catalog;

engine::Scenario scenario(int nodes, const std::string& model, const std::string& quant) {
  engine::Scenario s;
  s.name = "executor-test";
  for (int i = 0; i < nodes; ++i) s.nodes.push_back({"n" + std::to_string(i), "m3-ultra-512gb"});
  s.fabric.type = "full-mesh";
  s.fabric.link = "tb5-rdma";
  for (int a = 0; a < nodes; ++a)
    for (int b = a + 1; b < nodes; ++b) s.fabric.cables.push_back({a, b, 0, 0, "tb5-rdma"});
  s.model = model;
  s.quant = quant;
  s.workload.requests = 1;
  s.workload.prompt_tokens.value = 64;
  s.workload.output_tokens.value = 4;
  return s;
}

// Token times of the single request, simulated in a child process.
std::vector<double> token_times(const engine::Scenario& s, const std::string& strategy) {
  const auto r = sim::run_isolated([&] {
    const auto& catalog = Catalog::builtin();
    const auto plan = engine::make_plan(s, catalog, strategy);
    const auto profile = engine::BackendProfile::load(catalog.dir(), "meshinfer");
    const auto result = sim::simulate(s, catalog, plan, profile, engine::make_requests(s.workload, 1));
    std::string out;
    for (double t : result.requests.at(0).token_times) out += fmt::format("{:.17g} ", t);
    return out;
  });
  if (!r.ok) throw std::runtime_error(r.output);
  std::vector<double> times;
  std::istringstream in(r.output);
  for (double t; in >> t;) times.push_back(t);
  return times;
}

// The shape of the decode step that produces token `k` (k >= 1) after a prompt of `prompt`.
engine::StepShape decode_shape(int prompt, int k) {
  engine::StepShape s;
  s.tokens = 1;
  s.sequences = 1;
  const double c = prompt + k - 1;
  s.attended = c + 1;
  s.kv_read_tokens = c + 1;
  s.logits = 1;
  return s;
}

double message_s(const engine::LinkCard& link, double bytes) {
  const double frames = std::max(1.0, std::ceil(bytes / link.frame_bytes));
  return link.per_message_overhead_s + link.latency_s + frames * link.frame_bytes / link.bandwidth;
}

TEST(Executor, SingleNodeDecodeStepIsTheSumOfItsOps) {
  const auto s = scenario(1, "llama-3.1-8b", "bf16");
  const auto times = token_times(s, "tensor");
  ASSERT_EQ(times.size(), 4u);
  const auto& catalog = Catalog::builtin();
  const auto plan = engine::make_plan(s, catalog, "tensor");
  const auto profile = engine::BackendProfile::load(catalog.dir(), "meshinfer");
  const auto& m = catalog.model("llama-3.1-8b");
  const engine::CostModel cost(m, m.quant("bf16"), catalog.hardware("m3-ultra-512gb"), profile, plan.shards[0]);
  for (int k = 1; k < 4; ++k) {
    const auto shape = decode_shape(64, k);
    double expected = cost.lm_head_s(shape, 1.0);
    for (int l = 0; l < m.layers; ++l) expected += cost.attention_s(l, shape) + cost.ffn_s(l, shape);
    EXPECT_NEAR(times[k] - times[k - 1], expected, 1e-9 * expected) << "token " << k;
  }
}

TEST(Executor, TensorParallelAddsTwoAllReducesPerBlock) {
  const auto s = scenario(2, "llama-3.1-8b", "bf16");
  const auto times = token_times(s, "tensor");
  ASSERT_EQ(times.size(), 4u);
  const auto& catalog = Catalog::builtin();
  const auto plan = engine::make_plan(s, catalog, "tensor");
  const auto profile = engine::BackendProfile::load(catalog.dir(), "meshinfer");
  const auto& m = catalog.model("llama-3.1-8b");
  const auto& link = catalog.link("tb5-rdma");
  const engine::CostModel cost(m, m.quant("bf16"), catalog.hardware("m3-ultra-512gb"), profile, plan.shards[0]);
  const auto shape = decode_shape(64, 2);
  // Two nodes: an all-reduce is one message each way, an all-gather of token ids too.
  const double all_reduce = message_s(link, m.hidden * 2.0);
  double expected = cost.lm_head_s(shape, 0.5) + message_s(link, 2 * 8.0);
  for (int l = 0; l < m.layers; ++l) expected += cost.attention_s(l, shape) + cost.ffn_s(l, shape) + 2 * all_reduce;
  EXPECT_NEAR(times[2] - times[1], expected, 0.02 * expected);
}

TEST(Executor, PipelineRunsStagesOneAfterAnother) {
  const auto s = scenario(2, "llama-3.1-8b", "bf16");
  const auto times = token_times(s, "pipeline");
  ASSERT_EQ(times.size(), 4u);
  const auto& catalog = Catalog::builtin();
  const auto plan = engine::make_plan(s, catalog, "pipeline");
  const auto profile = engine::BackendProfile::load(catalog.dir(), "meshinfer");
  const auto& m = catalog.model("llama-3.1-8b");
  const auto& link = catalog.link("tb5-rdma");
  const auto shape = decode_shape(64, 2);
  double expected = message_s(link, m.hidden * 2.0) + message_s(link, 4.0);  // activations on, token id back
  for (const auto& shard : plan.shards) {
    const engine::CostModel cost(m, m.quant("bf16"), catalog.hardware(shard.hardware), profile, shard);
    for (int l = shard.first_layer; l < shard.end_layer; ++l) expected += cost.attention_s(l, shape) + cost.ffn_s(l, shape);
  }
  const engine::CostModel last(m, m.quant("bf16"), catalog.hardware("m3-ultra-512gb"), profile, plan.shards[1]);
  expected += last.lm_head_s(shape, 1.0);
  EXPECT_NEAR(times[2] - times[1], expected, 0.02 * expected);
}

}  // namespace
