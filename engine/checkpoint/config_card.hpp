// A model named by its config.json instead of a catalog card: `meshinfer plan
// --model PATH` (a model directory or its config.json) and a scenario's model
// path to a config.json. The card takes the config's
// shape (engine/checkpoint/model_config for llama, qwen3 and qwen3_moe;
// engine/checkpoint/mla_config for deepseek_v3 and kimi_k2) and the one quantization it
// records (engine/checkpoint/config_quantization); no weights are read.
#pragma once

#include <string>

#include "engine/cards/catalog.hpp"

namespace engine {

// Whether a --model value that is no catalog card's name names a path.
bool is_model_path(const std::string& model);
// The card of a model directory (its config.json) or of a config.json; named
// after the directory. Throws InputError naming the file, the key and why.
ModelCard config_card(const std::string& path);

}  // namespace engine
