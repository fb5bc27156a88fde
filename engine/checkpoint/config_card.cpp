#include "engine/checkpoint/config_card.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/checkpoint/config_quantization.hpp"
#include "engine/checkpoint/mla_config.hpp"
#include "engine/checkpoint/model_config.hpp"

namespace engine {

namespace {

namespace fs = std::filesystem;

// kimi_k2 is deepseek_v3's architecture (mlx-lm's MODEL_REMAPPING).
constexpr const char* kPlannedTypes[] = {"llama", "qwen3", "qwen3_moe", "deepseek_v3", "kimi_k2"};

// "models/qwen3/config.json" and "models/qwen3/" are both "qwen3".
std::string card_name(const fs::path& config) {
  const fs::path dir = fs::absolute(config).lexically_normal().parent_path();
  return dir.filename().string();
}

}  // namespace

bool is_model_path(const std::string& model) {
  return model.find('/') != std::string::npos || model.ends_with(".json") || fs::exists(model);
}

ModelCard config_card(const std::string& path) {
  fs::path file = path;
  if (fs::is_directory(file)) file /= kConfigFile;
  if (!fs::is_regular_file(file))
    throw InputError(file.string(), "", "cannot open (a model is a directory holding config.json, or a config.json)");
  const std::string where = file.string();  // JsonValue keeps a pointer to it
  const nlohmann::json j = load_json(where);
  ConfigReader r(JsonObject(JsonValue(j, "", where)));
  const std::string type = choice(r.need("model_type"), "model type", kPlannedTypes);
  ModelCard card;
  MlxQuantization mlx;
  if (type == "deepseek_v3" || type == "kimi_k2") {
    card = mla_card(r, card_name(file));
    mlx = parse_mlx_quantization(r);
  } else {
    const ModelConfig c = parse_model_config(j, where);  // the same reading as a run's
    card = model_card(c, card_name(file), {});
    mlx = c.quant;
  }
  card.quantizations = {config_quantization(r, card, mlx)};
  return card;
}

}  // namespace engine
