#include "engine/checkpoint/random_model.hpp"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/base/error.hpp"
#include "engine/checkpoint/checkpoint_writer.hpp"
#include "engine/checkpoint/mlx_quant_writer.hpp"
#include "engine/checkpoint/safetensors.hpp"

namespace engine {

namespace {

// Uniform weights of standard deviation `stddev`, drawn from the raw engine
// (std::*_distribution differ between standard libraries; the bytes must not).
class Weights {
 public:
  explicit Weights(std::uint64_t seed) : rng_(seed) {}

  NamedTensor make(std::string name, std::vector<std::int64_t> shape, double stddev, double mean = 0) {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    NamedTensor t{std::move(name), std::move(shape), std::vector<float>(n)};
    const double half_width = std::sqrt(3.0) * stddev;
    for (float& x : t.data) x = static_cast<float>(mean + half_width * (2 * ((rng_() >> 11) * 0x1.0p-53) - 1));
    return t;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

ModelConfig tiny_model_config() {
  ModelConfig c;
  c.model_type = "qwen3_moe";
  c.num_hidden_layers = 4;
  c.hidden_size = 256;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 4;
  c.head_dim = 32;
  c.intermediate_size = c.moe_intermediate_size = 256;
  c.num_experts = 8;
  c.num_experts_per_tok = 2;
  c.vocab_size = 512;
  c.rope.theta = 1e6;  // Qwen3's published checkpoints'
  return c;
}

std::vector<NamedTensor> random_weights(const ModelConfig& c, std::uint64_t seed) {
  Weights w(seed);
  const std::int64_t h = c.hidden_size, d = c.head_dim, v = c.vocab_size;
  // Projections scaled by 1/sqrt(fan-in) keep every layer's output near unit
  // size; norms near one. Embedding rows of unit size make tokens distinct.
  const double in_h = 1 / std::sqrt(double(h));
  std::vector<NamedTensor> tensors;
  tensors.push_back(w.make("model.embed_tokens.weight", {v, h}, 1.0));
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    tensors.push_back(w.make(p + "input_layernorm.weight", {h}, 0.1, 1.0));
    tensors.push_back(w.make(p + "post_attention_layernorm.weight", {h}, 0.1, 1.0));
    tensors.push_back(w.make(p + "self_attn.q_proj.weight", {c.num_attention_heads * d, h}, in_h));
    tensors.push_back(w.make(p + "self_attn.k_proj.weight", {c.num_key_value_heads * d, h}, in_h));
    tensors.push_back(w.make(p + "self_attn.v_proj.weight", {c.num_key_value_heads * d, h}, in_h));
    tensors.push_back(w.make(p + "self_attn.o_proj.weight", {h, c.num_attention_heads * d},
                             1 / std::sqrt(double(c.num_attention_heads * d))));
    if (c.qk_norm()) {
      tensors.push_back(w.make(p + "self_attn.q_norm.weight", {d}, 0.1, 1.0));
      tensors.push_back(w.make(p + "self_attn.k_norm.weight", {d}, 0.1, 1.0));
    }
    auto swiglu = [&](const std::string& prefix, std::int64_t width) {
      tensors.push_back(w.make(prefix + "gate_proj.weight", {width, h}, in_h));
      tensors.push_back(w.make(prefix + "up_proj.weight", {width, h}, in_h));
      tensors.push_back(w.make(prefix + "down_proj.weight", {h, width}, 1 / std::sqrt(double(width))));
    };
    if (c.sparse_layer(l)) {
      tensors.push_back(w.make(p + "mlp.gate.weight", {c.num_experts, h}, in_h));
      for (int e = 0; e < c.num_experts; ++e)
        swiglu(p + "mlp.experts." + std::to_string(e) + ".", c.moe_intermediate_size);
    } else {
      swiglu(p + "mlp.", c.intermediate_size);
    }
  }
  tensors.push_back(w.make("model.norm.weight", {h}, 0.1, 1.0));
  if (!c.tie_word_embeddings) tensors.push_back(w.make("lm_head.weight", {v, h}, in_h));
  return tensors;
}

void write_random_model(const std::string& dir, const ModelConfig& config, std::uint64_t seed,
                        const ModelFiles& files) {
  const ModelConfig c = parse_model_config(to_json(config), "make-model options");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(dir, "", "cannot create the directory: " + ec.message());
  const std::vector<NamedTensor> tensors = random_weights(c, seed);
  if (files.bits != 0) {
    write_mlx_quantized(dir, c, tensors, files.bits, files.group_size, files.shards);
    return;
  }
  write_model_config(dir, c);
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"generator", "meshinfer make-model, seed " + std::to_string(seed)}};
  if (files.shards <= 1) {
    write_safetensors((std::filesystem::path(dir) / kWeightsFile).string(), tensors, metadata);
    return;
  }
  std::vector<RawTensor> raw;
  for (const NamedTensor& t : tensors)
    raw.push_back({t.name,
                   "F32",
                   t.shape,
                   {reinterpret_cast<const unsigned char*>(t.data.data()), t.data.size() * sizeof(float)}});
  write_checkpoint(dir, raw, metadata, {files.shards, /*always_index=*/false, /*pad=*/true});
}

}  // namespace engine
