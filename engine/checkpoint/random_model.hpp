// A model directory with seeded random weights (`meshinfer make-model`):
// config.json and model.safetensors in F32 under Hugging Face tensor names,
// or sharded, or MLX affine-quantized.
// The same config and seed give the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/safetensors.hpp"

namespace engine {

// make-model's defaults, the tiny model of the real-hardware issue: qwen3_moe,
// 4 layers, hidden 256, 8 heads / 4 KV heads of 32, 8 experts of width 256,
// top-2, vocabulary 512.
ModelConfig tiny_model_config();

// How the weights are written.
struct ModelFiles {
  int shards = 1;       // more: model-0000i-of-0000n.safetensors and an index
  int bits = 0;         // 4 or 8: MLX affine-quantized (engine/checkpoint/mlx_quant_writer.hpp); 0: F32
  int group_size = 64;  // of the quantized weights
};

// The weights, F32 under Hugging Face names, in file order.
std::vector<NamedTensor> random_weights(const ModelConfig& config, std::uint64_t seed);

// Creates `dir` if needed. Throws InputError when the config is refused (the
// checks of load_model_config) or the files cannot be written.
void write_random_model(const std::string& dir, const ModelConfig& config, std::uint64_t seed,
                        const ModelFiles& files = {});

}  // namespace engine
