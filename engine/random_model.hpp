// A model directory with seeded random weights (`meshinfer make-model`):
// config.json and model.safetensors in F32 under Hugging Face tensor names.
// The same config and seed give the same bytes.
#pragma once

#include <cstdint>
#include <string>

#include "engine/model_config.hpp"

namespace engine {

// Creates `dir` if needed. Throws InputError when the config is refused (the
// checks of load_model_config) or the files cannot be written.
void write_random_model(const std::string& dir, const ModelConfig& config, std::uint64_t seed);

}  // namespace engine
