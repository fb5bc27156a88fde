#include "engine/cards/model_math.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace engine {

namespace {

// Attention projection weights of one layer.
double attention_params(const ModelCard& m) {
  const double h = m.hidden;
  if (!m.mla) {
    const double q = h * m.heads * m.head_dim;
    const double kv = 2 * h * m.kv_heads * m.head_dim;
    const double o = double(m.heads) * m.head_dim * h;
    return q + kv + o;
  }
  // MLA: queries and keys/values go through low-rank latents; only the
  // kv latent (kv_lora + rope) is cached.
  const MlaShape& a = *m.mla;
  const double qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  const double q =
      a.q_lora_rank == 0 ? h * m.heads * qk_dim : h * a.q_lora_rank + double(a.q_lora_rank) * m.heads * qk_dim;
  const double kv_a = h * (a.kv_lora_rank + a.qk_rope_head_dim);
  const double kv_b = double(a.kv_lora_rank) * m.heads * (a.qk_nope_head_dim + a.v_head_dim);
  const double o = double(m.heads) * a.v_head_dim * h;
  return q + kv_a + kv_b + o;
}

struct FfnParams {
  double total = 0;
  double active = 0;
};

// SwiGLU: gate, up and down projections, 3 x hidden x intermediate.
FfnParams ffn_params(const ModelCard& m, int layer) {
  const double h = m.hidden;
  if (!m.is_moe_layer(layer)) {
    const double dense = 3 * h * m.ffn;
    return {dense, dense};
  }
  const MoeShape& e = *m.moe;
  const double expert = 3 * h * e.expert_ffn;
  const double router = h * e.experts;
  return {(e.experts + e.shared_experts) * expert + router, (e.active_experts + e.shared_experts) * expert + router};
}

double kv_bytes_per_token_per_layer(const ModelCard& m) {
  const double elements = m.mla ? m.mla->kv_lora_rank + m.mla->qk_rope_head_dim : 2.0 * m.kv_heads * m.head_dim;
  return elements * m.kv_bytes_per_element;
}

// Per cached token: QK^T and AV, each one multiply-add (2 FLOPs) per element.
double attention_flops_per_context(const ModelCard& m) {
  if (!m.mla) return 4.0 * m.heads * m.head_dim;
  const MlaShape& a = *m.mla;
  return double(m.heads) * (2 * (a.qk_nope_head_dim + a.qk_rope_head_dim) + 2 * a.v_head_dim);
}

template <typename F>
double sum_over_layers(const ModelCard& m, F field) {
  double sum = 0;
  for (int layer = 0; layer < m.layers; ++layer) sum += field(layer_cost(m, layer));
  return sum;
}

}  // namespace

// Before attention and before the FFN; MLA also normalises its two latents.
double norm_params(const ModelCard& m) {
  const double mla_norms = m.mla ? m.mla->q_lora_rank + m.mla->kv_lora_rank : 0;
  return 2.0 * m.hidden + mla_norms;
}

LayerCost layer_cost(const ModelCard& m, int layer) {
  if (layer < 0 || layer >= m.layers) {
    throw std::out_of_range(fmt::format("layer {} out of range for \"{}\" ({} layers)", layer, m.name, m.layers));
  }
  const double attention = attention_params(m);
  const FfnParams ffn = ffn_params(m, layer);
  LayerCost c;
  c.params = attention + ffn.total + norm_params(m);
  c.active_params = attention + ffn.active + norm_params(m);
  c.flops_per_token = 2 * (attention + ffn.active);  // norms are not matmuls
  c.attention_flops_per_token_per_context = attention_flops_per_context(m);
  c.kv_bytes_per_token = kv_bytes_per_token_per_layer(m);
  return c;
}

double LayerParts::total() const {
  return heads * per_query_head + kv_heads * per_kv_head + replicated + router + dense_ffn +
         per_expert * (routed_experts + shared_experts);
}

LayerParts layer_parts(const ModelCard& m, int layer) {
  LayerParts p;
  const double h = m.hidden;
  p.heads = m.heads;
  p.kv_heads = m.mla ? 0 : m.kv_heads;
  if (!m.mla) {
    p.per_query_head = 2 * h * m.head_dim;  // q column block and o row block
    p.per_kv_head = 2 * h * m.head_dim;
  } else {
    const MlaShape& a = *m.mla;
    const double qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    p.per_query_head = (a.q_lora_rank == 0 ? h : a.q_lora_rank) * qk_dim +
                       double(a.kv_lora_rank) * (a.qk_nope_head_dim + a.v_head_dim) + a.v_head_dim * h;
    p.replicated = (a.q_lora_rank == 0 ? 0 : h * a.q_lora_rank) + h * (a.kv_lora_rank + a.qk_rope_head_dim);
  }
  p.replicated += norm_params(m);
  if (m.is_moe_layer(layer)) {
    p.per_expert = 3 * h * m.moe->expert_ffn;
    p.routed_experts = m.moe->experts;
    p.shared_experts = m.moe->shared_experts;
    p.active_experts = m.moe->active_experts;
    p.router = h * m.moe->experts;
  } else {
    p.dense_ffn = 3 * h * m.ffn;
  }
  return p;
}

// The final norm (hidden weights) is left out: it is negligible.
double embedding_params(const ModelCard& m) {
  const double matrix = double(m.vocab) * m.hidden;
  return m.tied_embeddings ? matrix : 2 * matrix;
}

double total_params(const ModelCard& m) {
  return sum_over_layers(m, [](const LayerCost& c) { return c.params; }) + embedding_params(m);
}

// As models publish it ("22B active"): the embeddings count in full.
double active_params(const ModelCard& m) {
  return sum_over_layers(m, [](const LayerCost& c) { return c.active_params; }) + embedding_params(m);
}

double weight_bytes(const ModelCard& m, const Quantization& q) { return total_params(m) * q.bits_per_weight / 8; }

double routed_expert_bits(const ModelCard& m, const Quantization& q) {
  if (q.dense_bits_per_weight == 0) return q.bits_per_weight;
  double routed = 0;
  for (int layer = 0; layer < m.layers; ++layer) {
    const LayerParts p = layer_parts(m, layer);
    routed += p.routed_experts * p.per_expert;
  }
  if (routed == 0) return 0;
  const double total = total_params(m);
  return (q.bits_per_weight * total - q.dense_bits_per_weight * (total - routed)) / routed;
}

double kv_bytes_per_token(const ModelCard& m) {
  return sum_over_layers(m, [](const LayerCost& c) { return c.kv_bytes_per_token; });
}

// One token reads the active weights of every layer, the whole LM head
// (tied or not) and a single row of the input embedding, then the KV cache.
double decode_bytes_per_token(const ModelCard& m, const Quantization& q, int context) {
  const double layers = sum_over_layers(m, [](const LayerCost& c) { return c.active_params; });
  const double lm_head = double(m.vocab) * m.hidden;
  const double params = layers + lm_head + m.hidden;
  return params * q.bits_per_weight / 8 + kv_bytes_per_token(m) * context;
}

}  // namespace engine
