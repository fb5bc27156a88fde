#include "engine/compute/model_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/compute/safetensors.hpp"
#include "engine/error.hpp"
#include "engine/json_input.hpp"

namespace engine {

namespace {

using nlohmann::json;

constexpr const char* kModelTypes[] = {"llama", "qwen3", "qwen3_moe"};

// config.json as Hugging Face writes it, through engine/json_input: keys this
// reader does not know are normal there (and ignored), and null means absent.
class ConfigReader {
 public:
  explicit ConfigReader(JsonObject o) : o_(std::move(o)) {}

  std::optional<JsonValue> find(std::string_view key) {
    auto v = o_.find(key);
    return v && !v->raw().is_null() ? v : std::nullopt;
  }
  JsonValue need(std::string_view key) {
    auto v = find(key);
    return v ? *v : o_.need(key);
  }
  [[noreturn]] void fail(std::string_view key, const std::string& reason) { need(key).fail(reason); }

  // A size: an integer from 1 to 2^30, so products of sizes stay in range.
  int positive(std::string_view key) {
    const JsonValue v = need(key);
    const int n = v.as<int>(kOne);
    if (n > (1 << 30)) v.fail(fmt::format("must be at most 2^30, got {}", n));
    return n;
  }
  int integer(std::string_view key, int fallback) { return find(key) ? positive(key) : fallback; }
  double number(std::string_view key, double fallback) {
    auto v = find(key);
    return v ? v->as<double>(kPositive) : fallback;
  }
  bool flag(std::string_view key, bool fallback) {
    auto v = find(key);
    return v ? v->as<bool>() : fallback;
  }

 private:
  JsonObject o_;
};

std::string dtype_name(const std::string& safetensors_dtype) {
  std::string out = safetensors_dtype;
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
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
  c.model_type = choice(r.need("model_type"), "model type", kModelTypes);
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
  if (auto act = r.find("hidden_act"); act && act->raw() != "silu")
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
    if (auto dense = r.find("mlp_only_layers"); dense && !dense->raw().empty())
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
