// The card of a DeepSeek-V3 config.json (model_type "deepseek_v3", or
// "kimi_k2", which mlx-lm remaps to it: docs/checkpoint-formats.md#deepseek-v3-and-kimi-k2), for
// planning only: CpuBackend has no multi-head latent attention and refuses these.
#pragma once

#include <string>

#include "engine/cards/catalog.hpp"
#include "engine/checkpoint/config_reader.hpp"

namespace engine {

// The card's shape (no quantizations) from `config`. The shape keys are
// required: transformers' DeepseekV3Config defaults them to the 671B model,
// which would plan a typo'd config as DeepSeek-V3. Throws InputError.
ModelCard mla_card(ConfigReader& config, const std::string& name);

}  // namespace engine
