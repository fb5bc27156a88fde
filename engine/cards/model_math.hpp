// What follows from a model card: parameters, weight bytes, KV bytes per
// token, FLOPs, and how a layer's parameters split across tensor and expert
// parallel shards.
#pragma once

#include "engine/cards/cards.hpp"

namespace engine {

// Per-model derived figures (per token, per layer unless said otherwise).
struct LayerCost {
  double params = 0;                                 // all parameters of the layer
  double active_params = 0;                          // parameters touched by one token
  double flops_per_token = 0;                        // 2 x active params (matmuls only)
  double attention_flops_per_token_per_context = 0;  // score+value FLOPs per cached token
  double kv_bytes_per_token = 0;
};

// A layer's parameters split the way tensor and expert parallelism divide them.
struct LayerParts {
  double per_query_head = 0;    // query (and MLA q_b/kv_b) plus output columns of one head
  double per_kv_head = 0;       // K and V of one KV head (GQA; 0 for MLA)
  double replicated = 0;        // never split: norms, MLA latent projections
  double router = 0;            // MoE gate, replicated
  double dense_ffn = 0;         // dense SwiGLU, split by columns (0 on MoE layers)
  double per_expert = 0;        // one expert's SwiGLU (0 on dense layers)
  int heads = 0, kv_heads = 0;  // KV heads is 0 for MLA (the latent is replicated)
  int routed_experts = 0, shared_experts = 0, active_experts = 0;
  double total() const;  // equals layer_cost().params
};
LayerParts layer_parts(const ModelCard& m, int layer);

double total_params(const ModelCard& m);
double active_params(const ModelCard& m);
double embedding_params(const ModelCard& m);  // input embedding + LM head
double norm_params(const ModelCard& m);       // one layer's RMSNorm weights
LayerCost layer_cost(const ModelCard& m, int layer);
double weight_bytes(const ModelCard& m, const Quantization& q);
// Bits a routed-expert weight takes: q's average, or what a mixed quant's dense
// width leaves (Quantization::dense_bits_per_weight); 0 when a mixed quant has no routed experts.
double routed_expert_bits(const ModelCard& m, const Quantization& q);
double kv_bytes_per_token(const ModelCard& m);  // all layers
// Bytes read from memory to decode one token at `context` cached tokens.
double decode_bytes_per_token(const ModelCard& m, const Quantization& q, int context);

}  // namespace engine
