#include "engine/cards/module_params.hpp"

#include <charconv>
#include <map>
#include <string>

namespace engine {

namespace {

// Modules of one decoder layer, by the path after "model.layers.L.".
std::optional<double> layer_module(const ModelCard& m, bool moe_layer, std::string_view rest) {
  const double h = m.hidden, heads = m.heads;
  if (rest == "input_layernorm" || rest == "post_attention_layernorm") return h;
  if (rest == "self_attn.q_norm" || rest == "self_attn.k_norm") return double(m.head_dim);  // Qwen3
  const std::map<std::string_view, double> ffn = [&]() -> std::map<std::string_view, double> {
    if (!moe_layer) return {{"mlp.gate_proj", h * m.ffn}, {"mlp.up_proj", h * m.ffn}, {"mlp.down_proj", h * m.ffn}};
    const MoeShape& e = *m.moe;
    const double stacked = double(e.experts) * h * e.expert_ffn, shared = double(e.shared_experts) * h * e.expert_ffn;
    return {{"mlp.gate", double(e.experts) * h},  // the router
            {"mlp.switch_mlp.gate_proj", stacked},  {"mlp.switch_mlp.up_proj", stacked},
            {"mlp.switch_mlp.down_proj", stacked},  {"mlp.shared_experts.gate_proj", shared},
            {"mlp.shared_experts.up_proj", shared}, {"mlp.shared_experts.down_proj", shared}};
  }();
  if (auto it = ffn.find(rest); it != ffn.end()) return it->second;
  // One expert unstacked: mlp.experts.E.{gate,up,down}_proj.
  if (moe_layer && rest.starts_with("mlp.experts.")) {
    const std::string_view tail = rest.substr(rest.find('.', 12) + 1);
    if (tail == "gate_proj" || tail == "up_proj" || tail == "down_proj") return h * m.moe->expert_ffn;
    return std::nullopt;
  }
  if (!m.mla) {
    const double q = h * heads * m.head_dim, kv = h * m.kv_heads * m.head_dim;
    const std::map<std::string_view, double> attention = {
        {"self_attn.q_proj", q}, {"self_attn.k_proj", kv}, {"self_attn.v_proj", kv}, {"self_attn.o_proj", q}};
    auto it = attention.find(rest);
    return it == attention.end() ? std::nullopt : std::optional(it->second);
  }
  const MlaShape& a = *m.mla;
  const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
  const std::map<std::string_view, double> attention = {
      {"self_attn.q_proj", h * heads * qk},  // no query latent (q_lora_rank 0)
      {"self_attn.q_a_proj", h * a.q_lora_rank},
      {"self_attn.q_a_layernorm", double(a.q_lora_rank)},
      {"self_attn.q_b_proj", a.q_lora_rank * heads * qk},
      {"self_attn.kv_a_proj_with_mqa", h * (a.kv_lora_rank + a.qk_rope_head_dim)},
      {"self_attn.kv_a_layernorm", double(a.kv_lora_rank)},
      {"self_attn.kv_b_proj", a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim)},
      // mlx-lm's absorbed split of kv_b_proj (docs/checkpoint-formats.md#deepseek-v3-and-kimi-k2).
      {"self_attn.embed_q", heads * a.kv_lora_rank * a.qk_nope_head_dim},
      {"self_attn.unembed_out", heads * a.v_head_dim * a.kv_lora_rank},
      {"self_attn.o_proj", heads * a.v_head_dim * h}};
  auto it = attention.find(rest);
  return it == attention.end() ? std::nullopt : std::optional(it->second);
}

}  // namespace

std::optional<double> module_params(const ModelCard& m, std::string_view path) {
  if (path == "lm_head" || path == "model.embed_tokens") return double(m.vocab) * m.hidden;
  if (path == "model.norm") return double(m.hidden);
  constexpr std::string_view kLayers = "model.layers.";
  if (!path.starts_with(kLayers)) return std::nullopt;
  path.remove_prefix(kLayers.size());
  int layer = -1;
  const auto [end, ec] = std::from_chars(path.data(), path.data() + path.size(), layer);
  if (ec != std::errc() || end == path.data() + path.size() || *end != '.' || layer < 0 || layer >= m.layers)
    return std::nullopt;
  return layer_module(m, m.is_moe_layer(layer), path.substr(end - path.data() + 1));
}

}  // namespace engine
