// A model directory with seeded random weights (`meshinfer make-model`):
// config.json and model.safetensors in F32 under Hugging Face tensor names.
// The same config and seed give the same bytes.
#pragma once

#include <cstdint>
#include <string>

#include "engine/compute/model_config.hpp"

namespace engine {

// make-model's defaults, the tiny model of the real-hardware issue: qwen3_moe,
// 4 layers, hidden 256, 8 heads / 4 KV heads of 32, 8 experts of width 256,
// top-2, vocabulary 512.
ModelConfig tiny_model_config();

// Creates `dir` if needed. Throws InputError when the config is refused (the
// checks of load_model_config) or the files cannot be written.
void write_random_model(const std::string& dir, const ModelConfig& config, std::uint64_t seed);

}  // namespace engine
