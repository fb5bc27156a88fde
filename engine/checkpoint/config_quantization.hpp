// The quantization a config.json records, as the bits a weight takes on disk
// (scales and biases included): what planning needs without the weights.
//  - MLX affine ("quantization", docs/checkpoint-formats.md#mlx-affine-quantization): bits plus a scale
//    and a bias of the weights' dtype per group; per-module entries weighted
//    by their modules' sizes. Named "mlx-4bit", "mlx-8bit", as
//    WeightLayout::quantization names a directory's weights.
//  - quantization_config "fp8" with weight_block_size (DeepSeek-V3,
//    docs/checkpoint-formats.md#deepseek-v3-and-kimi-k2): every Linear but the
//    router and lm_head in fp8 with an f32 scale per block; the rest in the
//    dtype. Named "fp8".
//  - quantization_config "compressed-tensors" pack-quantized int (Kimi-K2):
//    the Linears its ignore list leaves, in int with a scale of the dtype per
//    group. Named "int4" (or "int8").
//  - otherwise the dtype ("dtype", or transformers v4's "torch_dtype"):
//    "bf16", "f16" or "f32".
#pragma once

#include "engine/cards/catalog.hpp"
#include "engine/checkpoint/config_reader.hpp"
#include "engine/checkpoint/mlx_quant_config.hpp"

namespace engine {

// `card` is the config's shape; `mlx` its MLX block, already read
// (parse_mlx_quantization). Throws InputError naming the key and why.
Quantization config_quantization(ConfigReader& config, const ModelCard& card, const MlxQuantization& mlx);

}  // namespace engine
