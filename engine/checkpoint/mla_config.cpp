#include "engine/checkpoint/mla_config.hpp"

#include <fmt/format.h>

namespace engine {

namespace {

// A key read as a count from `min` (q_lora_rank may be 0: no query latent).
int count(ConfigReader& r, const char* key, int min) {
  const int n = r.need(key).as<int>(Min{double(min), false});
  if (n > (1 << 30)) r.fail(key, fmt::format("must be at most 2^30, got {}", n));
  return n;
}

// What would change the card's math and is not modelled is refused, not ignored.
void refuse_unmodelled(ConfigReader& r) {
  // DeepseekV3DecoderLayer: MoE iff layer >= first_k_dense_replace and layer % moe_layer_freq == 0.
  if (auto freq = r.find("moe_layer_freq"); freq && freq->as<int>() != 1)
    freq->fail("only 1 is planned (every layer from first_k_dense_replace on is MoE)");
  for (const char* key : {"attention_bias", "mlp_bias"})
    if (r.flag(key, false)) r.fail(key, "only false is planned");
  if (auto act = r.find("hidden_act"); act && act->raw() != "silu")
    r.fail("hidden_act", "only \"silu\" (SwiGLU) is planned");
}

}  // namespace

ModelCard mla_card(ConfigReader& r, const std::string& name) {
  refuse_unmodelled(r);
  ModelCard m;
  m.name = name;
  m.layers = r.positive("num_hidden_layers");
  m.hidden = r.positive("hidden_size");
  m.heads = r.positive("num_attention_heads");
  // MLA caches one latent whatever this says; the card keeps it for tensor-parallel checks, as transformers does.
  m.kv_heads = r.integer("num_key_value_heads", m.heads);
  if (m.heads % m.kv_heads != 0)
    r.fail("num_key_value_heads", fmt::format("{} does not divide num_attention_heads ({})", m.kv_heads, m.heads));
  MlaShape a;
  // null: queries projected straight from hidden (DeepSeek-V2-Lite); absent is a typo, not a choice.
  a.q_lora_rank = r.is_null("q_lora_rank") ? 0 : count(r, "q_lora_rank", 0);
  a.kv_lora_rank = r.positive("kv_lora_rank");
  a.qk_nope_head_dim = r.positive("qk_nope_head_dim");
  a.qk_rope_head_dim = r.positive("qk_rope_head_dim");
  a.v_head_dim = r.positive("v_head_dim");
  m.mla = a;
  m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  m.vocab = r.positive("vocab_size");
  m.tied_embeddings = r.flag("tie_word_embeddings", false);
  m.ffn = r.positive("intermediate_size");
  // null routed experts: every layer dense, as transformers builds it.
  if (r.is_null("n_routed_experts")) return m;
  MoeShape e;
  e.experts = r.positive("n_routed_experts");
  e.active_experts = r.positive("num_experts_per_tok");
  if (e.active_experts > e.experts)
    r.fail("num_experts_per_tok", fmt::format("{} is more than n_routed_experts ({})", e.active_experts, e.experts));
  e.shared_experts = r.is_null("n_shared_experts") ? 0 : count(r, "n_shared_experts", 0);
  e.expert_ffn = r.positive("moe_intermediate_size");
  e.dense_layers = count(r, "first_k_dense_replace", 0);
  if (e.dense_layers > m.layers)
    r.fail("first_k_dense_replace", fmt::format("{} is more than num_hidden_layers ({})", e.dense_layers, m.layers));
  m.moe = e;
  // num_nextn_predict_layers (multi-token prediction) adds a layer's weights
  // that decoding does not run; the catalog's cards leave it out too.
  return m;
}

}  // namespace engine
