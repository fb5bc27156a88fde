// Where each module's weights are in a model directory's files and how they
// are stored, from the headers alone: f32 or 16-bit floats, or MLX
// affine-quantized (docs/checkpoint-formats.md#mlx-affine-quantization),
// experts under Hugging Face's names (mlp.experts.E.*) or stacked as MLX writes
// them (mlp.switch_mlp.*, docs/checkpoint-formats.md#stacked-experts). A module
// is quantized iff "<module>.scales" exists; its bits and group come from
// config.json's quantization block and must agree with the shapes. Anything
// else is refused with the file, the JSON path and the reason.
#pragma once

#include <memory>
#include <string>

#include "engine/cards/catalog.hpp"
#include "engine/checkpoint/checkpoint.hpp"
#include "engine/checkpoint/model_config.hpp"

namespace engine {

inline std::string layer_name(int layer, const std::string& rest) {
  return "model.layers." + std::to_string(layer) + "." + rest;
}

// One module's tensors: [(stack x) out x in] floats, or packed words with scales and biases.
struct ModuleLayout {
  std::string module;
  const SafetensorsFile* file = nullptr;  // the weight's
  const TensorInfo* weight = nullptr;
  const SafetensorsFile *scales_file = nullptr, *biases_file = nullptr;
  const TensorInfo *scales = nullptr, *biases = nullptr;  // quantized only
  AffineParams params;                                    // quantized only
  std::int64_t out = 0, in = 0;
};

class WeightLayout {
 public:
  // `config_file` names config.json in errors about its quantization block.
  WeightLayout(std::shared_ptr<const Checkpoint> checkpoint, const ModelConfig& config, std::string config_file);

  // Module `module` (a path without ".weight") of [out x in], or of [stacked x out x in] when stacked > 0.
  ModuleLayout module(const std::string& module, std::int64_t out, std::int64_t in, std::int64_t stacked) const;
  // The module of expert `e`'s `proj` in `layer`; `stacked`: the experts it stacks, 0 if one expert's.
  std::string expert_module(int layer, int e, const std::string& proj, std::int64_t& stacked) const;

  // Checks every module and norm the config needs: what would not load is refused before a run.
  void check_all() const;
  // The card's quantization: the weights' dtype ("f32", "bf16") or "mlx-4bit"/"mlx-8bit".
  Quantization quantization() const;

  const std::shared_ptr<const Checkpoint>& checkpoint() const { return ck_; }
  const ModelConfig& config() const { return c_; }

 private:
  std::shared_ptr<const Checkpoint> ck_;
  ModelConfig c_;
  std::string config_file_;
};

// The card of a model directory, once every tensor its config needs is
// checked (names, shapes, dtypes, quantization; headers only).
ModelCard load_model_card(const std::string& dir);

}  // namespace engine
