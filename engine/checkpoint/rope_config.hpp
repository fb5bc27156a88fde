// The RoPE of a config.json, read as transformers v5 reads old and new
// configs alike (convert_rope_params_to_dict, standardize_rope_params;
// docs/checkpoint-formats.md#rope-parameters-and-old-configs): "rope_scaling" if given, else "rope_parameters";
// "rope_type" or the legacy "type"; rope_theta inside the dict, else at the
// top level, else 10000. What would change the math and is not implemented
// (other rope types, partial rotation, per-layer RoPE, keys the type does not
// read) is refused with the file, the JSON path and the reason.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "engine/checkpoint/config_reader.hpp"
#include "engine/checkpoint/rope.hpp"

namespace engine {

// `max_position`: max_position_embeddings, the default of
// original_max_position_embeddings (llama3, yarn) and yarn's factor source.
RopeScaling parse_rope(ConfigReader& config, int max_position);

// The legacy schema both transformers v4 and v5 read: "rope_theta" and, for
// a scaled type, "rope_scaling".
void write_rope(const RopeScaling& r, nlohmann::json& config);

}  // namespace engine
