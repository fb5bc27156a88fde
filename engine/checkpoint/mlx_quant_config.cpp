#include "engine/checkpoint/mlx_quant_config.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace engine {

namespace {

constexpr const char* kBlock = "quantization";
constexpr int kBits[] = {4, 8};  // MLX also writes 2, 3, 5 and 6; CpuBackend has kernels for these two
constexpr int kGroups[] = {32, 64, 128};

// A parameters dict: the global one or a module's (defaults, not the global's).
AffineParams parse_params(ConfigReader& r) {
  AffineParams p;
  if (auto mode = r.find("mode"); mode && mode->as<std::string>() != "affine")
    mode->fail(fmt::format("mode '{}' is not supported (only affine is)", mode->as<std::string>()));
  p.bits = r.integer("bits", p.bits);
  if (std::find(std::begin(kBits), std::end(kBits), p.bits) == std::end(kBits))
    r.fail("bits", fmt::format("{}-bit weights are not supported (4 and 8 are)", p.bits));
  p.group_size = r.integer("group_size", p.group_size);
  if (std::find(std::begin(kGroups), std::end(kGroups), p.group_size) == std::end(kGroups))
    r.fail("group_size", fmt::format("{} is not an MLX group size (32, 64 and 128 are)", p.group_size));
  return p;
}

}  // namespace

std::string MlxQuantization::json_path(const std::string& path) const {
  return modules.count(path) ? json_pointer(where, path) : where;
}

MlxQuantization parse_mlx_quantization(ConfigReader& config) {
  MlxQuantization q;
  std::optional<JsonValue> block = config.find(kBlock);
  if (!block) {
    // mlx-lm's copy stands in when alone; HF's quantizers have a quant_method (refused elsewhere).
    auto copy = config.find("quantization_config");
    if (!copy || !copy->raw().is_object() || copy->raw().contains("quant_method")) return q;
    block = copy;
  }
  q.present = true;
  q.where = block->path();
  ConfigReader global{JsonObject(*block)};
  q.global = parse_params(global);
  for (const auto& [key, value] : block->raw().items()) {
    if (key == "group_size" || key == "bits" || key == "mode") continue;
    const JsonValue v(value, json_pointer(block->path(), key), block->file());
    if (value.is_boolean()) {
      q.modules[key] = value.get<bool>() ? std::optional(q.global) : std::nullopt;  // older files: true = global
    } else if (value.is_object()) {
      ConfigReader module{JsonObject(v)};
      q.modules[key] = parse_params(module);
    } else {
      v.fail("must be a module's parameters {group_size, bits, mode}, true or false");
    }
  }
  return q;
}

void write_mlx_quantization(const MlxQuantization& q, nlohmann::json& config) {
  if (!q.present) return;
  nlohmann::json block = {{"group_size", q.global.group_size}, {"bits", q.global.bits}, {"mode", "affine"}};
  for (const auto& [path, p] : q.modules)
    block[path] = p ? nlohmann::json{{"group_size", p->group_size}, {"bits", p->bits}} : nlohmann::json(false);
  config[kBlock] = block;
  config["quantization_config"] = block;
}

}  // namespace engine
