// The card a publisher's config.json makes (tests/data/configs) equals the
// catalog's card of that model in every field the planner and cost model read:
// one test per catalog model, its quantization the config's own.
#include "engine/checkpoint/config_card.hpp"

#include <gtest/gtest.h>

#include <string>

#include "engine/cards/model_math.hpp"

namespace engine {
namespace {

const std::string kConfigs = MESHINFER_SOURCE_DIR "/tests/data/configs/";

ModelCard from_config(const std::string& name) { return config_card(kConfigs + name + "/config.json"); }

// Every field model_math, the cost model and the planner read, then what they derive.
void expect_catalog_shape(const ModelCard& got) {
  const ModelCard& want = Catalog::builtin().model(got.name);
  EXPECT_EQ(got.layers, want.layers);
  EXPECT_EQ(got.hidden, want.hidden);
  EXPECT_EQ(got.heads, want.heads);
  EXPECT_EQ(got.kv_heads, want.kv_heads);
  EXPECT_EQ(got.head_dim, want.head_dim);
  EXPECT_EQ(got.ffn, want.ffn);
  EXPECT_EQ(got.vocab, want.vocab);
  EXPECT_EQ(got.tied_embeddings, want.tied_embeddings);
  EXPECT_EQ(got.kv_bytes_per_element, want.kv_bytes_per_element);
  ASSERT_EQ(got.moe.has_value(), want.moe.has_value());
  if (want.moe) {
    EXPECT_EQ(got.moe->experts, want.moe->experts);
    EXPECT_EQ(got.moe->active_experts, want.moe->active_experts);
    EXPECT_EQ(got.moe->shared_experts, want.moe->shared_experts);
    EXPECT_EQ(got.moe->expert_ffn, want.moe->expert_ffn);
    EXPECT_EQ(got.moe->dense_layers, want.moe->dense_layers);
  }
  ASSERT_EQ(got.mla.has_value(), want.mla.has_value());
  if (want.mla) {
    EXPECT_EQ(got.mla->q_lora_rank, want.mla->q_lora_rank);
    EXPECT_EQ(got.mla->kv_lora_rank, want.mla->kv_lora_rank);
    EXPECT_EQ(got.mla->qk_nope_head_dim, want.mla->qk_nope_head_dim);
    EXPECT_EQ(got.mla->qk_rope_head_dim, want.mla->qk_rope_head_dim);
    EXPECT_EQ(got.mla->v_head_dim, want.mla->v_head_dim);
  }
  EXPECT_DOUBLE_EQ(total_params(got), total_params(want));
  EXPECT_DOUBLE_EQ(active_params(got), active_params(want));
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(got), kv_bytes_per_token(want));
}

// The config's one quantization is the catalog card's of that name (the
// catalog writes bits to 4 decimals).
void expect_catalog_quant(const ModelCard& got, const std::string& quant) {
  ASSERT_EQ(got.quantizations.size(), 1u);
  const Quantization& q = got.quantizations[0];
  EXPECT_EQ(q.name, quant);
  const Quantization& want = Catalog::builtin().model(got.name).quant(quant);
  EXPECT_NEAR(q.bits_per_weight, want.bits_per_weight, 5e-5);
  EXPECT_EQ(q.dense_bits_per_weight, want.dense_bits_per_weight);
}

TEST(ConfigCard, Qwen3_235bA22bIsTheCatalogCard) {
  const ModelCard card = from_config("qwen3-235b-a22b");
  EXPECT_EQ(card.name, "qwen3-235b-a22b");
  expect_catalog_shape(card);
  expect_catalog_quant(card, "bf16");
}

TEST(ConfigCard, DeepSeekV31IsTheCatalogCardInItsNativeFp8) {
  const ModelCard card = from_config("deepseek-v3.1");
  expect_catalog_shape(card);
  expect_catalog_quant(card, "fp8");
  // Linears at 8 bits and an f32 scale per 128x128 block; the rest (embeddings, LM head, norms, router) in bf16.
  const double rest = embedding_params(card) + card.layers * norm_params(card) + 58 * 7168.0 * 256;
  const double total = total_params(card);
  EXPECT_DOUBLE_EQ(card.quantizations[0].bits_per_weight,
                   ((total - rest) * (8 + 32.0 / (128 * 128)) + rest * 16) / total);
}

TEST(ConfigCard, KimiK2ThinkingIsTheCatalogCardWithItsInt4Experts) {
  const ModelCard card = from_config("kimi-k2-thinking");  // model_type kimi_k2: DeepSeek-V3's architecture
  expect_catalog_shape(card);
  const Quantization& q = card.quantizations.at(0);
  const Quantization& catalog = Catalog::builtin().model(card.name).quant("int4");
  EXPECT_EQ(q.name, "int4");
  EXPECT_EQ(q.dense_bits_per_weight, catalog.dense_bits_per_weight);  // all but the routed experts in bf16
  // The ignore list leaves the routed experts alone quantized: 4 bits and a bf16 scale per 32.
  EXPECT_NEAR(routed_expert_bits(card, q), 4.5, 1e-9);
  // The catalog's 4.7 is this layout's ~594 GB (its note) rounded up to the published "600+ GB"
  // (docs/reference-facts.md#model-shapes).
  EXPECT_NEAR(weight_bytes(card, q) / 1e9, 594.2, 0.1);
  EXPECT_LT(q.bits_per_weight, catalog.bits_per_weight);
  EXPECT_GT(q.bits_per_weight, catalog.bits_per_weight - 0.1);
}

TEST(ConfigCard, Llama33_70bIsTheCatalogCard) {
  const ModelCard card = from_config("llama-3.3-70b");
  expect_catalog_shape(card);
  expect_catalog_quant(card, "bf16");
}

TEST(ConfigCard, Llama31_405bIsTheCatalogCard) {
  const ModelCard card = from_config("llama-3.1-405b");
  expect_catalog_shape(card);
  expect_catalog_quant(card, "bf16");
}

TEST(ConfigCard, Llama31_8bIsTheCatalogCard) {
  const ModelCard card = from_config("llama-3.1-8b");
  expect_catalog_shape(card);
  expect_catalog_quant(card, "bf16");
}

TEST(ConfigCard, Llama32_3bIsTheCatalogCardWithTiedEmbeddings) {
  const ModelCard card = from_config("llama-3.2-3b");
  EXPECT_TRUE(card.tied_embeddings);
  expect_catalog_shape(card);
  expect_catalog_quant(card, "bf16");
}

TEST(ConfigCard, ADirectoryIsReadByItsConfigAndNamedAfterIt) {
  const ModelCard card = config_card(kConfigs + "llama-3.1-8b/");
  EXPECT_EQ(card.name, "llama-3.1-8b");
  EXPECT_EQ(card.quantizations.at(0).name, "bf16");
}

TEST(ConfigCard, PathsAreToldFromCatalogNames) {
  EXPECT_TRUE(is_model_path("models/llama/config.json"));
  EXPECT_TRUE(is_model_path("config.json"));
  EXPECT_FALSE(is_model_path("llama-3.3-70b"));
}

}  // namespace
}  // namespace engine
