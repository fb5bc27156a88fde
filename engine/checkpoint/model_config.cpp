#include "engine/checkpoint/model_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/checkpoint/config_reader.hpp"
#include "engine/checkpoint/mlx_quant_config.hpp"
#include "engine/checkpoint/rope_config.hpp"

namespace engine {

namespace {

using nlohmann::json;

constexpr const char* kModelTypes[] = {"llama", "qwen3", "qwen3_moe"};
// Multi-head latent attention: engine/checkpoint/mla_config.hpp makes cards of them for
// planning; CpuBackend has no MLA, so a run must not start on one.
constexpr const char* kPlanningOnlyTypes[] = {"deepseek_v3", "kimi_k2"};

// What CpuBackend does not compute must not be ignored silently.
void refuse_unimplemented(ConfigReader& r) {
  for (const char* key : {"attention_bias", "mlp_bias", "use_sliding_window"})
    if (r.flag(key, false)) r.fail(key, "only false is supported");
  if (auto act = r.find("hidden_act"); act && act->raw() != "silu")
    r.fail("hidden_act", "only \"silu\" (SwiGLU) is supported");
  // transformers v5 names each layer's attention; only full attention is computed.
  if (auto types = r.find("layer_types"))
    for (const JsonValue& t : types->elements())
      if (t.as<std::string>() != "full_attention") t.fail("only \"full_attention\" layers are supported");
  // HF's quantizers (fp8, gptq, awq, ...) name themselves; mlx-lm's copy of "quantization" does not.
  if (auto q = r.find("quantization_config"); q && q->raw().is_object() && q->raw().contains("quant_method")) {
    const JsonValue method(q->raw().at("quant_method"), json_pointer(q->path(), "quant_method"), q->file());
    method.fail(fmt::format("quantization method {} is not supported", describe_json(method.raw())));
  }
}

}  // namespace

ModelConfig load_model_config(const std::string& dir) {
  const std::string file = (std::filesystem::path(dir) / kConfigFile).string();
  if (!std::filesystem::is_regular_file(file))
    throw InputError(file, "", "cannot open (a model directory needs config.json and model.safetensors)");
  return parse_model_config(load_json(file), file);
}

ModelConfig parse_model_config(const nlohmann::json& j, const std::string& file) {
  ConfigReader r(JsonObject(JsonValue(j, "", file)));
  ModelConfig c;
  const JsonValue type = r.need("model_type");
  const auto planning_only = std::find(std::begin(kPlanningOnlyTypes), std::end(kPlanningOnlyTypes), type.raw());
  if (planning_only != std::end(kPlanningOnlyTypes))
    type.fail(
        fmt::format("{} (multi-head latent attention) is for planning only: CpuBackend does not compute it; "
                    "give `meshinfer plan --model` or a scenario's model path this config.json alone",
                    type.as<std::string>()));
  c.model_type = choice(type, "model type", kModelTypes);
  const bool llama = c.model_type == "llama", moe = c.model_type == "qwen3_moe";
  c.hidden_size = r.positive("hidden_size");
  c.num_hidden_layers = r.positive("num_hidden_layers");
  c.num_attention_heads = r.positive("num_attention_heads");
  // Constructor defaults (docs/checkpoint-formats.md#constructor-defaults): Llama's None is "as many as
  // the query heads"; Qwen3 and Qwen3-MoE default to 32 and 4, and only an
  // explicit null means "as many as the query heads".
  c.num_key_value_heads = r.is_null("num_key_value_heads")
                              ? c.num_attention_heads
                              : r.integer("num_key_value_heads", llama ? c.num_attention_heads
                                                                 : moe ? 4
                                                                       : 32);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    r.fail("num_key_value_heads",
           fmt::format("{} does not divide num_attention_heads ({})", c.num_key_value_heads, c.num_attention_heads));
  // Llama: hidden/heads for None; Qwen3: 128; Qwen3-MoE has no such parameter
  // and its attention takes getattr(config, "head_dim", hidden/heads).
  if (!llama && r.is_null("head_dim"))
    r.fail("head_dim", "null is not a head size for this model type (transformers would fail on it); give a number");
  c.head_dim = r.integer("head_dim", c.model_type == "qwen3" ? 128 : c.hidden_size / c.num_attention_heads);
  if (c.head_dim % 2 != 0) r.fail("head_dim", "must be even (RoPE rotates pairs)");
  c.vocab_size = r.positive("vocab_size");
  c.rms_norm_eps = r.number("rms_norm_eps", 1e-6);
  // transformers' constructors: 2048 for Llama, 32768 for Qwen3 and Qwen3-MoE.
  c.max_position_embeddings = r.integer("max_position_embeddings", llama ? 2048 : 32768);
  c.rope = parse_rope(r, c.max_position_embeddings);
  c.tie_word_embeddings = r.flag("tie_word_embeddings", false);
  refuse_unimplemented(r);
  c.quant = parse_mlx_quantization(r);
  if (moe) {
    c.num_experts = r.integer("num_experts", 128);
    c.num_experts_per_tok = r.integer("num_experts_per_tok", 8);
    if (c.num_experts_per_tok > c.num_experts)
      r.fail("num_experts_per_tok",
             fmt::format("{} is more than num_experts ({})", c.num_experts_per_tok, c.num_experts));
    c.moe_intermediate_size = r.integer("moe_intermediate_size", 768);
    c.norm_topk_prob = r.flag("norm_topk_prob", false);
    c.decoder_sparse_step = r.integer("decoder_sparse_step", 1);
    if (auto dense = r.find("mlp_only_layers")) {
      for (const JsonValue& layer : dense->elements()) {
        const int l = layer.as<int>(kNonNegative);
        if (l >= c.num_hidden_layers) layer.fail(fmt::format("is not a layer: the model has {}", c.num_hidden_layers));
        c.mlp_only_layers.push_back(l);
      }
    }
    bool dense_layers = false;
    for (int l = 0; l < c.num_hidden_layers; ++l) dense_layers |= !c.sparse_layer(l);
    // Only dense layers read it; transformers' own default is not in docs/checkpoint-formats.md#constructor-defaults,
    // so a model that needs it names it.
    c.intermediate_size =
        dense_layers ? r.positive("intermediate_size") : r.integer("intermediate_size", c.moe_intermediate_size);
  } else {
    c.intermediate_size = r.positive("intermediate_size");
  }
  return c;
}

nlohmann::json to_json(const ModelConfig& c) {
  json j = {{"model_type", c.model_type},
            {"architectures",
             {c.model_type == "llama" ? "LlamaForCausalLM"
              : c.moe()               ? "Qwen3MoeForCausalLM"
                                      : "Qwen3ForCausalLM"}},
            {"hidden_size", c.hidden_size},
            {"num_hidden_layers", c.num_hidden_layers},
            {"num_attention_heads", c.num_attention_heads},
            {"num_key_value_heads", c.num_key_value_heads},
            {"head_dim", c.head_dim},
            {"intermediate_size", c.intermediate_size},
            {"vocab_size", c.vocab_size},
            {"rms_norm_eps", c.rms_norm_eps},
            {"max_position_embeddings", c.max_position_embeddings},
            {"tie_word_embeddings", c.tie_word_embeddings},
            {"hidden_act", "silu"},
            {"attention_bias", false},
            {"torch_dtype", "float32"}};
  write_rope(c.rope, j);
  write_mlx_quantization(c.quant, j);
  if (c.moe()) {
    j["num_experts"] = c.num_experts;
    j["num_experts_per_tok"] = c.num_experts_per_tok;
    j["moe_intermediate_size"] = c.moe_intermediate_size;
    j["norm_topk_prob"] = c.norm_topk_prob;
    j["decoder_sparse_step"] = c.decoder_sparse_step;
    j["mlp_only_layers"] = c.mlp_only_layers;
  }
  return j;
}

void write_model_config(const std::string& dir, const ModelConfig& c) {
  const json j = to_json(c);
  const std::string file = (std::filesystem::path(dir) / kConfigFile).string();
  std::ofstream out(file, std::ios::trunc);
  if (!(out << j.dump(2) << '\n')) throw InputError(file, "", "cannot write");
}

ModelCard model_card(const ModelConfig& c, const std::string& name, const Quantization& quant) {
  ModelCard m;
  m.name = name;
  m.layers = c.num_hidden_layers;
  m.hidden = c.hidden_size;
  m.heads = c.num_attention_heads;
  m.kv_heads = c.num_key_value_heads;
  m.head_dim = c.head_dim;
  m.ffn = c.intermediate_size;
  m.vocab = c.vocab_size;
  m.tied_embeddings = c.tie_word_embeddings;
  if (c.moe()) {
    // The card knows leading dense layers only; CpuBackend computes any pattern.
    int dense = 0;
    while (dense < c.num_hidden_layers && !c.sparse_layer(dense)) ++dense;
    m.moe = MoeShape{c.num_experts, c.num_experts_per_tok, 0, c.moe_intermediate_size, dense};
  }
  m.quantizations = {quant};
  return m;
}

}  // namespace engine
