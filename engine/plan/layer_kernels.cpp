#include "engine/plan/layer_kernels.hpp"

#include "engine/base/portable_math.hpp"
#include "engine/cards/model_math.hpp"

namespace engine {

namespace {

constexpr double kActivationBytes = 2;  // activations and norm weights in 16-bit

Kernel elementwise(const char* name, double elements_in_out, double norm_weights = 0) {
  return {name, KernelKind::kElementwise, 0, (elements_in_out + norm_weights) * kActivationBytes, 0, 0};
}

// `rows` x `cols` weights applied to `tokens` activations of `rows` elements.
Kernel matmul(const char* name, double rows, double cols, int tokens) {
  return {name, KernelKind::kMatmul, rows * cols, tokens * (rows + cols) * kActivationBytes, 2 * rows * cols * tokens,
          0};
}

Kernel attention(const ModelCard& m, const Shard& shard, const StepShape& s, double query_dim, double value_dim) {
  const double kv_share = m.mla ? 1.0 : double(shard.kv_heads) / m.kv_heads;
  const double head_share = double(shard.heads) / m.heads;
  const LayerCost c = layer_cost(m, 0);  // the cache and its FLOPs are alike in every layer
  const double io = s.tokens * shard.heads * (query_dim + value_dim) * kActivationBytes;
  return {"attention",
          KernelKind::kAttention,
          0,
          s.kv_read_tokens * c.kv_bytes_per_token * kv_share + io,
          c.attention_flops_per_token_per_context * head_share * s.attended,
          0};
}

// Room for the most kernels a block launches (MoE with shared experts: 13),
// so that building a block's list allocates once: it is built per layer and step.
std::vector<Kernel> block_starting_with(const Kernel& first) {
  std::vector<Kernel> k;
  k.reserve(16);
  k.push_back(first);
  return k;
}

}  // namespace

std::vector<Kernel> attention_kernels(const ModelCard& m, const Shard& shard, const StepShape& s) {
  const double h = m.hidden, t = s.tokens, q_heads = shard.heads;
  std::vector<Kernel> k = block_starting_with(elementwise("attention norm", 2 * t * h, h));
  if (!m.mla) {
    const double d = m.head_dim, kv_heads = shard.kv_heads;
    k.push_back(matmul("q projection", h, q_heads * d, s.tokens));
    k.push_back(matmul("k projection", h, kv_heads * d, s.tokens));
    k.push_back(matmul("v projection", h, kv_heads * d, s.tokens));
    k.push_back(elementwise("rope", 2 * t * (q_heads + kv_heads) * d));
    k.push_back(attention(m, shard, s, d, d));
    k.push_back(matmul("output projection", q_heads * d, h, s.tokens));
  } else {
    const MlaShape& a = *m.mla;
    const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank > 0) {
      k.push_back(matmul("q down projection", h, a.q_lora_rank, s.tokens));
      k.push_back(elementwise("q latent norm", 2 * t * a.q_lora_rank, a.q_lora_rank));
    }
    k.push_back(matmul("q up projection", a.q_lora_rank > 0 ? a.q_lora_rank : h, q_heads * qk, s.tokens));
    k.push_back(matmul("kv down projection", h, a.kv_lora_rank + a.qk_rope_head_dim, s.tokens));
    k.push_back(elementwise("kv latent norm", 2 * t * a.kv_lora_rank, a.kv_lora_rank));
    k.push_back(matmul("kv up projection", a.kv_lora_rank, q_heads * (a.qk_nope_head_dim + a.v_head_dim), s.tokens));
    k.push_back(elementwise("rope", 2 * t * (q_heads + 1) * a.qk_rope_head_dim));
    k.push_back(attention(m, shard, s, qk, a.v_head_dim));
    k.push_back(matmul("output projection", q_heads * a.v_head_dim, h, s.tokens));
  }
  k.push_back(elementwise("residual add", 3 * t * h));
  return k;
}

std::vector<Kernel> ffn_kernels(const ModelCard& m, int layer, const Shard& shard, const StepShape& s) {
  const double h = m.hidden, t = s.tokens, f = shard.ffn_fraction;
  std::vector<Kernel> k = block_starting_with(elementwise("ffn norm", 2 * t * h, h));
  if (!m.is_moe_layer(layer)) {
    const double ffn = m.ffn * f;
    k.push_back(matmul("gate projection", h, ffn, s.tokens));
    k.push_back(matmul("up projection", h, ffn, s.tokens));
    k.push_back(elementwise("swiglu", 3 * t * ffn));
    k.push_back(matmul("down projection", ffn, h, s.tokens));
  } else {
    const MoeShape& e = *m.moe;
    const double ffn = e.expert_ffn * f;
    // A batch of T tokens, each routed to k of E experts, touches E(1-(1-k/E)^T)
    // distinct experts on average; this node holds `shard.experts` of them.
    const double touched = shard.experts * (1 - portable::powi(1 - double(e.active_experts) / e.experts, s.tokens));
    const double routed_tokens = t * e.active_experts * shard.experts / e.experts;  // token-expert pairs held here
    k.push_back(matmul("router", h, e.experts, s.tokens));
    k.push_back(elementwise("top-k", 2 * t * e.experts));
    // Each projection reads the touched experts' matrices, for the token-expert pairs held here.
    const auto experts = [&](const char* name) {
      return Kernel{name,
                    KernelKind::kExpertMatmul,
                    touched * h * ffn,
                    routed_tokens * (h + ffn) * kActivationBytes,
                    2 * routed_tokens * h * ffn,
                    touched};
    };
    k.push_back(experts("expert gate"));
    k.push_back(experts("expert up"));
    k.push_back(elementwise("expert swiglu", 3 * routed_tokens * ffn));
    k.push_back(experts("expert down"));
    if (e.shared_experts > 0) {
      const double shared = ffn * e.shared_experts;
      k.push_back(matmul("shared gate", h, shared, s.tokens));
      k.push_back(matmul("shared up", h, shared, s.tokens));
      k.push_back(elementwise("shared swiglu", 3 * t * shared));
      k.push_back(matmul("shared down", shared, h, s.tokens));
    }
    k.push_back(elementwise("expert combine", (routed_tokens + t) * h));
  }
  k.push_back(elementwise("residual add", 3 * t * h));
  return k;
}

std::vector<Kernel> lm_head_kernels(const ModelCard& m, const StepShape& s, double share) {
  const double h = m.hidden;
  return {elementwise("final norm", 2.0 * s.logits * h, h), matmul("lm head", h, m.vocab * share, s.logits)};
}

}  // namespace engine
