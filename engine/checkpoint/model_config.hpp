// A model directory in the Hugging Face layout: config.json (the keys of the
// "llama", "qwen3" and "qwen3_moe" model types) and the weights
// (engine/checkpoint/checkpoint.hpp: model.safetensors or its shards; F32, BF16,
// F16 or MLX affine-quantized). The loader refuses anything else with the
// file, the JSON path and the reason (InputError).
// A key left out takes the default of transformers' config class for the
// model_type (docs/checkpoint-formats.md#constructor-defaults), not one of meshinfer's.
#pragma once

#include <algorithm>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/checkpoint/mlx_quant_config.hpp"
#include "engine/checkpoint/rope.hpp"

namespace engine {

struct ModelConfig {
  std::string model_type = "qwen3";  // "llama", "qwen3" or "qwen3_moe"
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int head_dim = 0;
  int intermediate_size = 0;      // dense layers
  int moe_intermediate_size = 0;  // one expert (qwen3_moe)
  int num_experts = 0;            // 0: dense
  int num_experts_per_tok = 0;
  bool norm_topk_prob = true;        // renormalise the top-k router weights (Qwen3-MoE)
  int decoder_sparse_step = 1;       // qwen3_moe: every step-th layer is MoE
  std::vector<int> mlp_only_layers;  // qwen3_moe: layers with a dense FFN all the same
  int vocab_size = 0;
  double rms_norm_eps = 1e-6;
  int max_position_embeddings = 32768;
  RopeScaling rope;
  bool tie_word_embeddings = false;
  MlxQuantization quant;  // MLX affine quantization, when config.json has it

  bool qk_norm() const { return model_type != "llama"; }  // Qwen3 normalises q and k per head
  bool moe() const { return num_experts > 0; }
  // Qwen3MoeDecoderLayer: MoE iff not in mlp_only_layers and (layer+1) % decoder_sparse_step == 0.
  bool sparse_layer(int layer) const {
    return moe() && (layer + 1) % decoder_sparse_step == 0 &&
           std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) == mlp_only_layers.end();
  }
};

inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kWeightsFile = "model.safetensors";

// Reads DIR/config.json. Throws InputError.
ModelConfig load_model_config(const std::string& dir);
// The same checks on a config already parsed; `file` names it in errors.
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& file);
nlohmann::json to_json(const ModelConfig& c);
void write_model_config(const std::string& dir, const ModelConfig& c);

// The card the planner and cost model use; `name` names it in plans and
// reports; its one quantization is the weights' ("f32", "bf16", "mlx-4bit", ...).
ModelCard model_card(const ModelConfig& c, const std::string& name, const Quantization& quant);

}  // namespace engine
