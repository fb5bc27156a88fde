// How config.json records an MLX affine-quantized checkpoint
// (docs/checkpoint-formats.md#mlx-affine-quantization): "quantization" (or mlx-lm's copy "quantization_config", the
// one without a quant_method) holds the global group_size, bits and mode, and
// per-module entries keyed by module path: a dict of its own parameters
// (missing fields take MLX's defaults, group 64 and 4 bits, not the global
// values), true (the global ones) or false (not quantized). Whether a module
// is quantized at all is decided by the presence of "<path>.scales".
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "engine/checkpoint/config_reader.hpp"

namespace engine {

struct AffineParams {
  int group_size = 64;  // MLX's to_quantized defaults for mode "affine"
  int bits = 4;
  bool operator==(const AffineParams&) const = default;
};

struct MlxQuantization {
  bool present = false;
  std::string where = "/quantization";  // its JSON path: "quantization" or "quantization_config"
  AffineParams global;
  std::map<std::string, std::optional<AffineParams>> modules;  // nullopt: `false`

  // The parameters module `path` is quantized with, if quantized; nullopt when its entry is false.
  std::optional<AffineParams> params(const std::string& path) const {
    const auto it = modules.find(path);
    return it == modules.end() ? std::optional(global) : it->second;
  }
  // The JSON path of module `path`'s parameters, for errors.
  std::string json_path(const std::string& path) const;
  bool operator==(const MlxQuantization&) const = default;
};

// Refuses modes other than affine, bits other than 4 and 8, groups other than 32, 64 and 128.
MlxQuantization parse_mlx_quantization(ConfigReader& config);
// "quantization" and its copy "quantization_config", as mlx-lm's save_config writes them.
void write_mlx_quantization(const MlxQuantization& q, nlohmann::json& config);

}  // namespace engine
