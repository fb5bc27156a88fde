// Qwen3-MoE's dense layers (mlp_only_layers, decoder_sparse_step) are
// computed dense under every placement: leading ones the card knows (expert
// parallel computes them whole on every rank), and later ones it does not
// (the ranks' outputs are summed, so rank 0 alone adds them).
#include <gtest/gtest.h>

#include <tuple>

#include "cpu_driver.hpp"
#include "engine/checkpoint/checkpoint.hpp"
#include "engine/checkpoint/random_model.hpp"
#include "engine/checkpoint/weight_layout.hpp"
#include "support/cli_runner.hpp"

namespace {

engine::ModelConfig moe(std::vector<int> dense, int step = 1) {
  engine::ModelConfig c = engine::tiny_model_config();
  c.num_hidden_layers = 4;
  c.hidden_size = 64;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.intermediate_size = 96;
  c.moe_intermediate_size = 32;
  c.num_experts = 4;
  c.vocab_size = 128;
  c.mlp_only_layers = std::move(dense);
  c.decoder_sparse_step = step;
  return c;
}

std::vector<int> tokens(const std::string& dir, const engine::ModelConfig& c, engine::Strategy s, int ranks) {
  testsupport::CpuDriver d(dir, testsupport::even_plan(c, s, ranks));
  return testsupport::greedy(d, {5, 6, 7, 8, 9}, 8);
}

TEST(MoeLayers, DenseLayersAreDenseInTheFileAndUnderEveryPlacement) {
  // mlp_only_layers, decoder_sparse_step, and the leading dense layers the card counts.
  const std::vector<std::tuple<std::vector<int>, int, int>> cases = {{{0}, 1, 1}, {{2}, 1, 0}, {{}, 2, 1}};
  for (const auto& [dense, step, leading] : cases) {
    const engine::ModelConfig c = moe(dense, step);
    const std::string dir = testsupport::fresh_dir("moe-dense-layers");
    engine::write_random_model(dir, c, 4);
    const engine::Checkpoint ck(dir);
    for (int l = 0; l < c.num_hidden_layers; ++l) {
      EXPECT_EQ(ck.has(engine::layer_name(l, "mlp.gate.weight")), c.sparse_layer(l)) << l;
      EXPECT_EQ(ck.has(engine::layer_name(l, "mlp.up_proj.weight")), !c.sparse_layer(l)) << l;
    }
    EXPECT_EQ(engine::load_model_card(dir).moe->dense_layers, leading);
    const auto want = tokens(dir, c, engine::Strategy::kTensor, 1);
    EXPECT_EQ(tokens(dir, c, engine::Strategy::kTensor, 2), want);
    EXPECT_EQ(tokens(dir, c, engine::Strategy::kExpert, 2), want);
    EXPECT_EQ(tokens(dir, c, engine::Strategy::kExpert, 4), want);
  }
}

}  // namespace
