// config.json read as transformers reads it: the constructor defaults of each
// model_type, RoPE from rope_scaling or rope_parameters in either spelling,
// and a refusal naming the JSON path of whatever would change the math
// without being implemented.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/checkpoint/model_config.hpp"

namespace {

using nlohmann::json;

engine::ModelConfig parse(const json& j) { return engine::parse_model_config(j, "m/config.json"); }

// The JSON path and reason of the refusal, or a failure.
std::pair<std::string, std::string> refused(const json& j) {
  try {
    parse(j);
  } catch (const engine::InputError& e) {
    EXPECT_EQ(e.file(), "m/config.json");
    return {e.json_path(), e.reason()};
  }
  ADD_FAILURE() << "accepted " << j.dump();
  return {};
}

json minimal(const std::string& type, int heads = 32) {
  json j = {{"model_type", type},           {"hidden_size", 2048}, {"num_hidden_layers", 4},
            {"num_attention_heads", heads}, {"vocab_size", 1000},  {"intermediate_size", 4096}};
  return j;
}

json with(json j, const json& extra) {
  j.update(extra);
  return j;
}

TEST(ConfigReading, LlamaDefaults) {
  const auto c = parse(minimal("llama", 16));
  EXPECT_EQ(c.num_key_value_heads, 16);  // None: as many as the query heads
  EXPECT_EQ(c.head_dim, 2048 / 16);
  EXPECT_EQ(c.rope.theta, 10000.0);
  EXPECT_EQ(c.rope.type, "default");
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(parse(with(minimal("llama", 16), {{"num_key_value_heads", nullptr}, {"head_dim", nullptr}})).head_dim, 128);
}

TEST(ConfigReading, Qwen3Defaults) {
  const auto c = parse(minimal("qwen3"));
  EXPECT_EQ(c.num_key_value_heads, 32);
  EXPECT_EQ(c.head_dim, 128);  // not 2048/32
  EXPECT_EQ(c.rope.theta, 10000.0);
  EXPECT_EQ(c.max_position_embeddings, 32768);
  EXPECT_FALSE(c.tie_word_embeddings);
  // The default 32 KV heads do not divide 8 query heads; null means "as many".
  EXPECT_EQ(refused(minimal("qwen3", 8)).first, "/num_key_value_heads");
  EXPECT_EQ(parse(with(minimal("qwen3", 8), {{"num_key_value_heads", nullptr}})).num_key_value_heads, 8);
  EXPECT_EQ(refused(with(minimal("qwen3"), {{"head_dim", nullptr}})).first, "/head_dim");
}

TEST(ConfigReading, Qwen3MoeDefaults) {
  const auto c = parse(minimal("qwen3_moe"));
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 2048 / 32);  // getattr(config, "head_dim", hidden/heads)
  EXPECT_EQ(parse(with(minimal("qwen3_moe"), {{"head_dim", 128}})).head_dim, 128);  // Qwen3-30B-A3B
  EXPECT_EQ(c.rope.theta, 10000.0);
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.num_experts_per_tok, 8);
  EXPECT_EQ(c.moe_intermediate_size, 768);
  EXPECT_FALSE(c.norm_topk_prob);
  EXPECT_EQ(c.decoder_sparse_step, 1);
  EXPECT_TRUE(c.mlp_only_layers.empty());
  for (int l = 0; l < 4; ++l) EXPECT_TRUE(c.sparse_layer(l));
}

TEST(ConfigReading, SparseStepAndMlpOnlyLayersChooseTheDenseLayers) {
  const auto c = parse(with(minimal("qwen3_moe"), {{"decoder_sparse_step", 2}, {"mlp_only_layers", {3}}}));
  // (l + 1) % 2 == 0 and l not in [3]: only layer 1.
  EXPECT_FALSE(c.sparse_layer(0));
  EXPECT_TRUE(c.sparse_layer(1));
  EXPECT_FALSE(c.sparse_layer(2));
  EXPECT_FALSE(c.sparse_layer(3));
  const auto card =
      engine::model_card(parse(with(minimal("qwen3_moe"), {{"mlp_only_layers", {0, 1}}})), "m", {"f32", 32});
  EXPECT_EQ(card.moe->dense_layers, 2);
  EXPECT_EQ(refused(with(minimal("qwen3_moe"), {{"mlp_only_layers", {4}}})).first, "/mlp_only_layers/0");
  json no_width = with(minimal("qwen3_moe"), {{"mlp_only_layers", {0}}});
  no_width.erase("intermediate_size");
  EXPECT_EQ(refused(no_width).first, "/intermediate_size");
}

TEST(ConfigReading, RopeFromEitherSchemaAndSpelling) {
  const json llama3 = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  auto c = parse(with(minimal("llama"), {{"rope_theta", 500000.0}, {"rope_scaling", llama3}}));
  EXPECT_EQ(c.rope.type, "llama3");
  EXPECT_EQ(c.rope.theta, 500000.0);
  EXPECT_EQ(c.rope.factor, 8.0);
  EXPECT_EQ(c.rope.original_max_position, 8192.0);
  // v5: theta inside rope_parameters; legacy "type"; original context defaults to max_position_embeddings.
  c = parse(with(minimal("qwen3"), {{"max_position_embeddings", 4096},
                                    {"rope_parameters", {{"rope_theta", 1e6}, {"type", "yarn"}, {"factor", 4}}}}));
  EXPECT_EQ(c.rope.type, "yarn");
  EXPECT_EQ(c.rope.theta, 1e6);
  EXPECT_EQ(c.rope.original_max_position, 4096.0);
  EXPECT_EQ(c.rope.factor, 4.0);
  // yarn without a factor: max_position_embeddings / original.
  c = parse(
      with(minimal("qwen3"), {{"max_position_embeddings", 131072},
                              {"rope_scaling", {{"rope_type", "yarn"}, {"original_max_position_embeddings", 32768}}}}));
  EXPECT_EQ(c.rope.factor, 4.0);
  // rope_scaling wins over rope_parameters; an empty one does not.
  c = parse(with(minimal("llama"), {{"rope_scaling", {{"rope_type", "linear"}, {"factor", 2}}},
                                    {"rope_parameters", {{"rope_type", "default"}}}}));
  EXPECT_EQ(c.rope.type, "linear");
  c = parse(with(minimal("llama"),
                 {{"rope_scaling", json::object()}, {"rope_parameters", {{"rope_type", "linear"}, {"factor", 3}}}}));
  EXPECT_EQ(c.rope.factor, 3.0);
  // Written back in the legacy schema, it reads the same.
  c = parse(with(minimal("llama"), {{"rope_theta", 500000.0}, {"rope_scaling", llama3}}));
  EXPECT_EQ(parse(engine::to_json(c)).rope, c.rope);
}

TEST(ConfigReading, UnimplementedMathIsRefusedWithItsPath) {
  const json base = minimal("llama");
  auto path = [&](const json& extra) { return refused(with(base, extra)).first; };
  EXPECT_EQ(path({{"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 2}}}}), "/rope_scaling/rope_type");
  EXPECT_EQ(path({{"rope_parameters", {{"rope_type", "longrope"}}}}), "/rope_parameters/rope_type");
  EXPECT_EQ(path({{"rope_scaling", {{"type", "ntk"}, {"factor", 2}}}}), "/rope_scaling/type");
  EXPECT_EQ(path({{"partial_rotary_factor", 0.5}}), "/partial_rotary_factor");
  EXPECT_EQ(path({{"rope_parameters", {{"rope_type", "default"}, {"partial_rotary_factor", 0.25}}}}),
            "/rope_parameters/partial_rotary_factor");
  EXPECT_EQ(path({{"rope_scaling", {{"rope_type", "linear"}}}}), "/rope_scaling/factor");
  EXPECT_EQ(path({{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8}, {"high_freq_factor", 4}}}}),
            "/rope_scaling/low_freq_factor");
  EXPECT_EQ(path({{"rope_scaling", {{"rope_type", "linear"}, {"factor", 2}, {"mscale", 1}}}}), "/rope_scaling/mscale");
  EXPECT_EQ(path({{"rope_parameters", {{"full_attention", {{"rope_type", "default"}}}}}}),
            "/rope_parameters/full_attention");
  EXPECT_EQ(path({{"layer_types", {"full_attention", "sliding_attention"}}}), "/layer_types/1");
  EXPECT_EQ(path({{"use_sliding_window", true}}), "/use_sliding_window");
  EXPECT_EQ(path({{"mlp_bias", true}}), "/mlp_bias");
  EXPECT_EQ(path({{"quantization_config", {{"quant_method", "fp8"}}}}), "/quantization_config/quant_method");
  const auto [where, why] = refused(with(base, {{"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 2}}}}));
  EXPECT_NE(why.find("not implemented"), std::string::npos) << why;
}

}  // namespace
