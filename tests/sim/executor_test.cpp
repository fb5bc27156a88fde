// Simulated step times against the cost model and link cards, computed here
// from the cards (not pasted from a previous run).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "engine/cards/stack_profile.hpp"
#include "engine/plan/cost_model.hpp"
#include "engine/plan/planner.hpp"
#include "sim/child_run.hpp"
#include "sim/scenario_run.hpp"

namespace {

using engine::Catalog;

engine::Scenario scenario(int nodes, const std::string& model, const std::string& quant) {
  engine::Scenario s;
  s.name = "executor-test";
  for (int i = 0; i < nodes; ++i) s.nodes.push_back({"n" + std::to_string(i), "m3-ultra-512gb"});
  s.fabric.type = engine::FabricType::kFullMesh;
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
std::vector<double> token_times(const engine::Scenario& s, engine::Strategy strategy) {
  const auto r = sim::run_in_child([&] {
    const auto& catalog = Catalog::builtin();
    const auto plan = engine::make_plan(s, catalog, strategy);
    const auto profile = engine::StackProfile::load(catalog.dir(), "meshinfer");
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

// Padded to whole frames, or as the card's wire_time_by_size times it.
double message_s(const engine::LinkCard& link, double bytes) {
  return link.per_message_overhead_s + link.latency_s + engine::timed_bytes(link, bytes) / link.bandwidth;
}

// The cards and plan a test derives its expected step times from.
struct Cards {
  Cards(const engine::Scenario& s, engine::Strategy strategy)
      : plan(engine::make_plan(s, Catalog::builtin(), strategy)),
        profile(engine::StackProfile::load(Catalog::builtin().dir(), "meshinfer")),
        model(Catalog::builtin().model(s.model)),
        quant(model.quant(s.quant)),
        link(Catalog::builtin().link("tb5-rdma")) {}

  engine::CostModel cost(int shard) const {
    const auto& sh = plan.shards[shard];
    return engine::CostModel(model, quant, Catalog::builtin().hardware(sh.hardware), profile, sh);
  }
  // Attention and FFN of every layer the shard holds, for one step.
  double layers_s(int shard, const engine::StepShape& shape) const {
    const auto c = cost(shard);
    double t = 0;
    for (int l = plan.shards[shard].first_layer; l < plan.shards[shard].end_layer; ++l)
      t += c.attention(l, shape).seconds + c.ffn(l, shape).seconds;
    return t;
  }

  engine::Plan plan;
  engine::StackProfile profile;
  const engine::ModelCard& model;
  const engine::Quantization& quant;
  const engine::LinkCard& link;
};

TEST(Executor, SingleNodeDecodeStepIsTheSumOfItsOps) {
  const auto s = scenario(1, "llama-3.1-8b", "bf16");
  const auto times = token_times(s, engine::Strategy::kTensor);
  ASSERT_EQ(times.size(), 4u);
  const Cards cards(s, engine::Strategy::kTensor);
  for (int k = 1; k < 4; ++k) {
    const auto shape = decode_shape(64, k);
    const double expected = cards.cost(0).lm_head(shape, 1.0).seconds + cards.layers_s(0, shape);
    EXPECT_NEAR(times[k] - times[k - 1], expected, 1e-9 * expected) << "token " << k;
  }
}

TEST(Executor, TensorParallelAddsTwoAllReducesPerBlock) {
  const auto s = scenario(2, "llama-3.1-8b", "bf16");
  const auto times = token_times(s, engine::Strategy::kTensor);
  ASSERT_EQ(times.size(), 4u);
  const Cards cards(s, engine::Strategy::kTensor);
  const auto shape = decode_shape(64, 2);
  // Two nodes: an all-reduce is one message each way, an all-gather of token ids too.
  const double all_reduce = message_s(cards.link, cards.model.hidden * 2.0);
  const double expected = cards.cost(0).lm_head(shape, 0.5).seconds + message_s(cards.link, 2 * 8.0) +
                          cards.layers_s(0, shape) + 2 * cards.model.layers * all_reduce;
  EXPECT_NEAR(times[2] - times[1], expected, 0.02 * expected);
}

TEST(Executor, PipelineRunsStagesOneAfterAnother) {
  const auto s = scenario(2, "llama-3.1-8b", "bf16");
  const auto times = token_times(s, engine::Strategy::kPipeline);
  ASSERT_EQ(times.size(), 4u);
  const Cards cards(s, engine::Strategy::kPipeline);
  const auto shape = decode_shape(64, 2);
  // Activations on to the second stage, the sampled token id back to the first.
  const double expected = message_s(cards.link, cards.model.hidden * 2.0) + message_s(cards.link, 4.0) +
                          cards.layers_s(0, shape) + cards.layers_s(1, shape) + cards.cost(1).lm_head(shape, 1.0).seconds;
  EXPECT_NEAR(times[2] - times[1], expected, 0.02 * expected);
}

}  // namespace
