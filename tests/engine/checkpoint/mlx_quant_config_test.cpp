// config.json's MLX quantization block: per-module entries do not inherit the
// global values, true and false, mlx-lm's copy alone; what is not computed
// (other modes, bits, group sizes) and what contradicts the files (a .scales
// the config does not expect, shapes of another width or group) is refused.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/random_model.hpp"
#include "engine/checkpoint/weight_layout.hpp"
#include "support/cli_runner.hpp"

namespace {

using nlohmann::json;

json base() {
  return {{"model_type", "qwen3"},    {"hidden_size", 64}, {"num_hidden_layers", 1},  {"num_attention_heads", 4},
          {"num_key_value_heads", 4}, {"vocab_size", 100}, {"intermediate_size", 128}};
}

engine::MlxQuantization quant(const json& block, const char* key = "quantization") {
  json j = base();
  j[key] = block;
  return engine::parse_model_config(j, "config.json").quant;
}

std::string refused_path(const json& block) {
  try {
    quant(block);
  } catch (const engine::InputError& e) {
    return e.json_path();
  }
  return "accepted";
}

TEST(MlxQuantConfig, ModuleEntriesTakeMlxDefaultsNotTheGlobalValues) {
  const auto q = quant({{"group_size", 32},
                        {"bits", 4},
                        {"model.layers.0.mlp.gate", {{"bits", 8}}},
                        {"lm_head", true},
                        {"model.norm", false}});
  ASSERT_TRUE(q.present);
  EXPECT_EQ(q.global, (engine::AffineParams{32, 4}));
  EXPECT_EQ(q.params("model.layers.0.mlp.gate"), (engine::AffineParams{64, 8}));  // group 64, not 32
  EXPECT_EQ(q.params("lm_head"), q.global);
  EXPECT_FALSE(q.params("model.norm").has_value());
  EXPECT_EQ(q.params("model.layers.0.self_attn.q_proj"), q.global);
  EXPECT_EQ(q.json_path("model.layers.0.mlp.gate"), "/quantization/model.layers.0.mlp.gate");
  // mlx-lm's copy alone stands in; HF's quantizers (with a quant_method) do not.
  EXPECT_TRUE(quant({{"group_size", 64}, {"bits", 8}}, "quantization_config").present);
  EXPECT_FALSE(quant(json::object(), "rope_scaling_unused").present);
}

TEST(MlxQuantConfig, WhatIsNotComputedIsRefusedWithItsPath) {
  EXPECT_EQ(refused_path({{"group_size", 32}, {"bits", 4}, {"mode", "mxfp4"}}), "/quantization/mode");
  EXPECT_EQ(refused_path({{"group_size", 64}, {"bits", 3}}), "/quantization/bits");
  EXPECT_EQ(refused_path({{"group_size", 16}, {"bits", 4}}), "/quantization/group_size");
  EXPECT_EQ(refused_path({{"group_size", 64}, {"bits", 4}, {"model.layers.0.mlp.gate", {{"bits", 2}}}}),
            "/quantization/model.layers.0.mlp.gate/bits");
  EXPECT_EQ(refused_path({{"group_size", 64}, {"bits", 4}, {"lm_head", 8}}), "/quantization/lm_head");
}

// A made MLX model (router: {"group_size": 64, "bits": 8}, the rest groups of 32) with config.json edited.
class MlxFiles : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = testsupport::fresh_dir("mlx-config-files");
    engine::ModelConfig c = engine::tiny_model_config();
    c.num_hidden_layers = 1;
    c.hidden_size = 64;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 16;
    c.num_experts = 4;
    c.moe_intermediate_size = 64;
    c.vocab_size = 100;
    engine::write_random_model(dir_, c, 3, {.shards = 1, .bits = 4, .group_size = 32});
    config_ = json::parse(testsupport::read_file(dir_ + "/config.json"));
  }
  // The refusal of loading the model with `config` as config.json.
  engine::InputError refusal(const json& config) {
    std::ofstream(dir_ + "/config.json") << config.dump();
    try {
      engine::load_model_card(dir_);
    } catch (const engine::InputError& e) {
      return e;
    }
    ADD_FAILURE() << "accepted";
    return engine::InputError("", "", "");
  }
  std::string dir_;
  json config_;
};

TEST_F(MlxFiles, ARouterEntryWithoutAGroupIsGroupsOf64) {
  json c = config_;
  c["quantization"]["model.layers.0.mlp.gate"] = {{"bits", 8}};
  std::ofstream(dir_ + "/config.json") << c.dump();
  EXPECT_EQ(engine::load_model_card(dir_).quantizations.at(0).name, "mlx-4bit");
  c["quantization"]["model.layers.0.mlp.gate"] = {{"bits", 8}, {"group_size", 32}};
  const auto e = refusal(c);
  EXPECT_EQ(e.json_path(), "/model.layers.0.mlp.gate.scales/shape");
  EXPECT_NE(e.reason().find("/quantization/model.layers.0.mlp.gate"), std::string::npos) << e.what();
}

TEST_F(MlxFiles, ShapesOfOtherBitsOrNoQuantizationBlockAreRefused) {
  json c = config_;
  c["quantization"]["bits"] = 8;
  c.erase("quantization_config");
  auto e = refusal(c);
  EXPECT_NE(e.reason().find("4-bit values"), std::string::npos) << e.what();
  EXPECT_NE(e.reason().find("/quantization"), std::string::npos) << e.what();
  c = config_;
  c.erase("quantization");
  c.erase("quantization_config");
  e = refusal(c);
  EXPECT_NE(e.reason().find("no \"quantization\" block"), std::string::npos) << e.what();
  c = config_;
  c["quantization"]["model.embed_tokens"] = false;
  e = refusal(c);
  EXPECT_EQ(e.file(), dir_ + "/config.json");
  EXPECT_EQ(e.json_path(), "/quantization/model.embed_tokens");
}

}  // namespace
