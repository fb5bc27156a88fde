// How many weights a module of a checkpoint holds, by its path as
// Hugging Face and mlx-lm name it ("model.layers.3.mlp.gate",
// "lm_head", ...), from a model card's shape: what a per-module
// quantization entry weighs in the model's average bits per weight.
#pragma once

#include <optional>
#include <string_view>

#include "engine/cards/cards.hpp"

namespace engine {

// nullopt: not a module of this architecture (or not one this knows).
std::optional<double> module_params(const ModelCard& m, std::string_view path);

}  // namespace engine
