#include "engine/compute/model_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/compute/safetensors.hpp"
#include "engine/error.hpp"

namespace engine {

namespace {

using nlohmann::json;

constexpr const char* kModelTypes[] = {"llama", "qwen3", "qwen3_moe"};

class ConfigReader {
 public:
  ConfigReader(const json& j, std::string file) : j_(j), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& reason) const {
    throw InputError(file_, "/" + key, reason);
  }
  int positive(const std::string& key) const {
    const json* v = find(key);
    if (!v) fail(key, "missing required key");
    if (!v->is_number_integer() || v->get<long long>() < 1 || v->get<long long>() > (1 << 30))
      fail(key, "must be a positive integer, got " + v->dump());
    return v->get<int>();
  }
  int integer(const std::string& key, int fallback) const { return find(key) ? positive(key) : fallback; }
  double number(const std::string& key, double fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_number() || v->get<double>() <= 0) fail(key, "must be a positive number, got " + v->dump());
    return v->get<double>();
  }
  bool flag(const std::string& key, bool fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(key, "must be true or false, got " + v->dump());
    return v->get<bool>();
  }
  const json* find(const std::string& key) const {
    const auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

 private:
  const json& j_;
  std::string file_;
};

std::string dtype_name(const std::string& safetensors_dtype) {
  std::string out = safetensors_dtype;
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

ModelConfig load_model_config(const std::string& dir) {
  const std::string file = (std::filesystem::path(dir) / kConfigFile).string();
  std::ifstream in(file);
  if (!in) throw InputError(file, "", "cannot open (a model directory needs config.json and model.safetensors)");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError(file, "", std::string("not valid JSON: ") + e.what());
  }
  return parse_model_config(j, file);
}

ModelConfig parse_model_config(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object()) throw InputError(file, "", "must be a JSON object");
  const ConfigReader r(j, file);
  ModelConfig c;
  const json* type = r.find("model_type");
  if (!type || !type->is_string()) r.fail("model_type", "missing or not a string");
  c.model_type = type->get<std::string>();
  if (std::find(std::begin(kModelTypes), std::end(kModelTypes), c.model_type) == std::end(kModelTypes))
    r.fail("model_type", fmt::format("'{}' is not supported (llama, qwen3, qwen3_moe are)", c.model_type));
  c.hidden_size = r.positive("hidden_size");
  c.num_hidden_layers = r.positive("num_hidden_layers");
  c.num_attention_heads = r.positive("num_attention_heads");
  c.num_key_value_heads = r.integer("num_key_value_heads", c.num_attention_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    r.fail("num_key_value_heads",
           fmt::format("{} does not divide num_attention_heads ({})", c.num_key_value_heads, c.num_attention_heads));
  c.head_dim = r.integer("head_dim", c.hidden_size / c.num_attention_heads);
  if (c.head_dim % 2 != 0) r.fail("head_dim", "must be even (RoPE rotates pairs)");
  c.vocab_size = r.positive("vocab_size");
  c.rms_norm_eps = r.number("rms_norm_eps", c.rms_norm_eps);
  c.rope_theta = r.number("rope_theta", c.model_type == "llama" ? 10000.0 : c.rope_theta);
  c.tie_word_embeddings = r.flag("tie_word_embeddings", false);
  if (r.find("rope_scaling")) r.fail("rope_scaling", "RoPE scaling is not supported; remove it or set it to null");
  // What CpuBackend does not compute must not be ignored silently.
  for (const char* key : {"attention_bias", "mlp_bias", "use_sliding_window"})
    if (r.flag(key, false)) r.fail(key, "only false is supported");
  if (const json* act = r.find("hidden_act"); act && *act != "silu")
    r.fail("hidden_act", "only \"silu\" (SwiGLU) is supported");
  if (c.model_type == "qwen3_moe") {
    c.num_experts = r.positive("num_experts");
    c.num_experts_per_tok = r.positive("num_experts_per_tok");
    if (c.num_experts_per_tok > c.num_experts)
      r.fail("num_experts_per_tok",
             fmt::format("{} is more than num_experts ({})", c.num_experts_per_tok, c.num_experts));
    c.moe_intermediate_size = r.positive("moe_intermediate_size");
    c.norm_topk_prob = r.flag("norm_topk_prob", true);
    if (r.integer("decoder_sparse_step", 1) != 1)
      r.fail("decoder_sparse_step", "only 1 (every layer MoE) is supported");
    if (const json* dense = r.find("mlp_only_layers"); dense && !dense->empty())
      r.fail("mlp_only_layers", "dense layers inside a MoE model are not supported");
    c.intermediate_size = r.integer("intermediate_size", c.moe_intermediate_size);
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
            {"rope_theta", c.rope_theta},
            {"tie_word_embeddings", c.tie_word_embeddings},
            {"hidden_act", "silu"},
            {"attention_bias", false},
            {"torch_dtype", "float32"}};
  if (c.moe()) {
    j["num_experts"] = c.num_experts;
    j["num_experts_per_tok"] = c.num_experts_per_tok;
    j["moe_intermediate_size"] = c.moe_intermediate_size;
    j["norm_topk_prob"] = c.norm_topk_prob;
    j["decoder_sparse_step"] = 1;
    j["mlp_only_layers"] = json::array();
  }
  return j;
}

void write_model_config(const std::string& dir, const ModelConfig& c) {
  const json j = to_json(c);
  const std::string file = (std::filesystem::path(dir) / kConfigFile).string();
  std::ofstream out(file, std::ios::trunc);
  if (!(out << j.dump(2) << '\n')) throw InputError(file, "", "cannot write");
}

ModelCard model_card(const ModelConfig& c, const std::string& name, const std::string& dtype) {
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
  if (c.moe()) m.moe = MoeShape{c.num_experts, c.num_experts_per_tok, 0, c.moe_intermediate_size, 0};
  m.quantizations = {{dtype, dtype == "f32" ? 32.0 : 16.0}};
  return m;
}

ModelCard load_model_card(const std::string& dir) {
  const ModelConfig c = load_model_config(dir);
  const SafetensorsFile weights((std::filesystem::path(dir) / kWeightsFile).string());
  const std::string dtype = dtype_name(weights.info("model.embed_tokens.weight").dtype);
  std::filesystem::path path = std::filesystem::path(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // "models/tiny/"
  return model_card(c, path.filename().string(), dtype);
}

}  // namespace engine
