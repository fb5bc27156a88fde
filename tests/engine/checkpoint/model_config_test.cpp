// Model directories: make-model's output is deterministic and loads back as
// the card the planner uses; bad configs are refused with the key and why.
#include "engine/checkpoint/model_config.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/cards/model_math.hpp"
#include "engine/checkpoint/random_model.hpp"
#include "engine/checkpoint/safetensors.hpp"
#include "engine/checkpoint/weight_layout.hpp"
#include "support/cli_runner.hpp"

namespace {

using testsupport::fresh_dir;
using testsupport::read_file;

engine::ModelConfig tiny_moe() {
  engine::ModelConfig c = engine::tiny_model_config();
  c.num_hidden_layers = 2;
  c.num_experts = 4;
  c.vocab_size = 100;
  return c;
}

TEST(ModelConfig, SameSeedSameBytesOtherSeedOtherWeights) {
  const std::string a = fresh_dir("model-a"), b = fresh_dir("model-b"), c = fresh_dir("model-c");
  engine::write_random_model(a, tiny_moe(), 7);
  engine::write_random_model(b, tiny_moe(), 7);
  engine::write_random_model(c, tiny_moe(), 8);
  EXPECT_EQ(read_file(a + "/model.safetensors"), read_file(b + "/model.safetensors"));
  EXPECT_EQ(read_file(a + "/config.json"), read_file(b + "/config.json"));
  EXPECT_NE(read_file(a + "/model.safetensors"), read_file(c + "/model.safetensors"));
}

TEST(ModelConfig, MadeModelHasHuggingFaceNamesAndLoadsAsACard) {
  const std::string dir = fresh_dir("model-card");
  engine::write_random_model(dir, tiny_moe(), 1);
  const engine::SafetensorsFile f(dir + "/model.safetensors");
  EXPECT_EQ(f.info("model.embed_tokens.weight").shape, (std::vector<std::int64_t>{100, 256}));
  EXPECT_EQ(f.info("model.layers.1.self_attn.k_proj.weight").shape, (std::vector<std::int64_t>{4 * 32, 256}));
  EXPECT_EQ(f.info("model.layers.1.self_attn.q_norm.weight").shape, (std::vector<std::int64_t>{32}));
  EXPECT_EQ(f.info("model.layers.0.mlp.gate.weight").shape, (std::vector<std::int64_t>{4, 256}));
  EXPECT_EQ(f.info("model.layers.0.mlp.experts.3.down_proj.weight").shape, (std::vector<std::int64_t>{256, 256}));
  EXPECT_TRUE(f.has("lm_head.weight"));
  const auto j = nlohmann::json::parse(read_file(dir + "/config.json"));
  EXPECT_EQ(j["model_type"], "qwen3_moe");
  EXPECT_EQ(j["num_experts_per_tok"], 2);

  const engine::ModelCard card = engine::load_model_card(dir + "/");
  EXPECT_EQ(card.name, "model-card");
  EXPECT_EQ(card.layers, 2);
  EXPECT_EQ(card.kv_heads, 4);
  ASSERT_TRUE(card.moe.has_value());
  EXPECT_EQ(card.moe->experts, 4);
  EXPECT_EQ(card.moe->active_experts, 2);
  EXPECT_EQ(card.moe->expert_ffn, 256);
  EXPECT_EQ(card.quantizations.at(0).name, "f32");
  // The card counts every parameter of the file but the q/k norms and the final norm, 4 bytes each.
  const std::string bytes = read_file(dir + "/model.safetensors");
  std::uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  const double uncounted = card.layers * 2 * card.head_dim + card.hidden;
  EXPECT_DOUBLE_EQ(engine::weight_bytes(card, card.quantizations[0]) + 4 * uncounted,
                   double(bytes.size() - 8 - header));
}

// The InputError of loading `config` (written as config.json), or a failure.
engine::InputError refusal_of(const nlohmann::json& config) {
  const std::string dir = fresh_dir("bad-config");
  std::ofstream(dir + "/config.json") << config.dump();
  try {
    engine::load_model_config(dir);
  } catch (const engine::InputError& e) {
    EXPECT_EQ(e.file(), dir + "/config.json");
    return e;
  }
  ADD_FAILURE() << "accepted " << config.dump();
  return engine::InputError("", "", "");
}

TEST(ModelConfig, BadConfigsNameTheKeyAndTheReason) {
  const nlohmann::json good = engine::to_json(tiny_moe());
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json j = good;
    j[key] = std::move(v);
    return j;
  };
  EXPECT_EQ(refusal_of(with("num_key_value_heads", 3)).json_path(), "/num_key_value_heads");
  EXPECT_NE(refusal_of(with("model_type", "mamba")).reason().find("unknown model type 'mamba'"), std::string::npos);
  EXPECT_EQ(refusal_of(with("num_experts_per_tok", 5)).json_path(), "/num_experts_per_tok");
  EXPECT_EQ(refusal_of(with("hidden_size", -4)).json_path(), "/hidden_size");
  EXPECT_EQ(refusal_of(with("rope_scaling", {{"rope_type", "llama3"}})).json_path(), "/rope_scaling/factor");
  EXPECT_EQ(refusal_of(with("attention_bias", true)).json_path(), "/attention_bias");
  EXPECT_EQ(refusal_of(with("hidden_act", "gelu")).json_path(), "/hidden_act");
  nlohmann::json missing = good;
  missing.erase("vocab_size");
  EXPECT_EQ(refusal_of(missing).reason(), "missing required key 'vocab_size'");
}

TEST(ModelConfig, MissingDirectoryFilesAreRefused) {
  const std::string dir = fresh_dir("model-empty");
  EXPECT_THROW(engine::load_model_card(dir), engine::InputError);
  engine::write_model_config(dir, tiny_moe());
  try {
    engine::load_model_card(dir);
    ADD_FAILURE() << "no weights, yet accepted";
  } catch (const engine::InputError& e) {
    EXPECT_EQ(e.file(), dir + "/model.safetensors");
  }
}

}  // namespace
