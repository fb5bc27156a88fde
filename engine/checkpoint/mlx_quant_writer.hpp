// make-model's MLX affine-quantized checkpoints, written from docs/checkpoint-formats.md
// (#alignment to #stacked-experts) as mlx-lm writes them, not from meshinfer's reader (so a test
// cannot pass by the two agreeing with themselves): every Linear and the
// embedding whose input width the group divides are quantized (scales and
// biases in bf16, values packed LSB first into U32 words), Qwen3-MoE's
// experts stacked as mlp.switch_mlp.*, the router at 8 bits in groups of 64
// (mlx-lm's quant_predicate), norms kept as they are; config.json gets
// "quantization" and its copy "quantization_config"; the files are unpadded
// and always indexed, as mlx-lm's save_model does.
#pragma once

#include <string>
#include <vector>

#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/safetensors.hpp"

namespace engine {

// `f32`: the model's weights under Hugging Face names (experts one by one).
void write_mlx_quantized(const std::string& dir, ModelConfig config, const std::vector<NamedTensor>& f32, int bits,
                         int group_size, int shards);

}  // namespace engine
