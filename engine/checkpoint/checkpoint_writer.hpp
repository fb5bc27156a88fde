// Writes a model directory's weights as the writers of
// docs/checkpoint-formats.md#shards-and-the-index do: one model.safetensors, or
// shards model-0000i-of-0000n.safetensors with model.safetensors.index.json
// ({"metadata": {"total_size"}, "weight_map"}).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.hpp"

namespace engine {

struct CheckpointLayout {
  int shards = 1;             // files, cut between tensors at about equal sizes
  bool always_index = false;  // mlx-lm writes an index even for one file; Hugging Face does not
  bool pad = true;            // Hugging Face aligns the data; MLX does not
};

void write_checkpoint(const std::string& dir, const std::vector<RawTensor>& tensors,
                      const std::map<std::string, std::string>& metadata, const CheckpointLayout& layout);

}  // namespace engine
