#include "engine/checkpoint/rope_config.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

namespace engine {

namespace {

constexpr const char* kRopeTypes[] = {"default", "linear", "llama3", "yarn"};
// Types transformers knows that compute differently: refused by name, not as typos.
constexpr const char* kUnimplementedTypes[] = {"dynamic", "longrope", "su", "mrope", "proportional"};

// Keys of the dict each type reads; the rest would be ignored, so refused.
std::vector<std::string> keys_read(const std::string& type) {
  std::vector<std::string> keys = {"rope_type", "type", "rope_theta", "partial_rotary_factor",
                                   "original_max_position_embeddings"};
  if (type != "default") keys.push_back("factor");
  if (type == "llama3") keys.insert(keys.end(), {"low_freq_factor", "high_freq_factor"});
  if (type == "yarn")
    keys.insert(keys.end(), {"attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"});
  return keys;
}

// transformers reads partial_rotary_factor at the top level (v4) and in the
// dict (v5); CpuBackend rotates whole heads only.
void refuse_partial_rotation(ConfigReader& r) {
  if (auto v = r.find("partial_rotary_factor"); v && v->as<double>(kPositive) != 1.0)
    v->fail("partial rotation is not supported (only 1.0, the whole head, is)");
}

std::string rope_type(ConfigReader& p) {
  auto v = p.find("rope_type");
  if (!v) v = p.find("type");  // the legacy spelling
  if (!v) return "default";
  const auto got = v->as<std::string>();
  if (std::find(std::begin(kUnimplementedTypes), std::end(kUnimplementedTypes), got) != std::end(kUnimplementedTypes))
    v->fail(fmt::format("RoPE type '{}' is not implemented (default, linear, llama3 and yarn are)", got));
  return choice(*v, "RoPE type", kRopeTypes);
}

// `rope_scaling or rope_parameters`: an empty rope_scaling is Python-false.
std::optional<JsonValue> rope_dict(ConfigReader& config) {
  if (auto scaling = config.find("rope_scaling"); scaling && !(scaling->raw().is_object() && scaling->raw().empty()))
    return scaling;
  return config.find("rope_parameters");
}

}  // namespace

RopeScaling parse_rope(ConfigReader& config, int max_position) {
  RopeScaling r;
  r.theta = config.number("rope_theta", r.theta);
  refuse_partial_rotation(config);
  const std::optional<JsonValue> dict = rope_dict(config);
  if (!dict) return r;
  ConfigReader p{JsonObject(*dict)};
  for (const auto& [key, value] : dict->raw().items())
    if (value.is_object())
      p.fail(key, "per-layer RoPE ({layer type: {...}}) is not supported; give one set of parameters");
  r.type = rope_type(p);
  r.theta = p.number("rope_theta", r.theta);  // v5 keeps theta in the dict; it wins (setdefault)
  refuse_partial_rotation(p);
  if (r.type != "default") r.factor = p.number("factor", 0);  // yarn's 0: not given
  if (r.type == "linear" || r.type == "llama3") (void)p.need("factor");
  r.original_max_position = p.number("original_max_position_embeddings", max_position);
  if (r.type == "llama3") {
    r.low_freq_factor = p.need("low_freq_factor").as<double>(kPositive);
    r.high_freq_factor = p.need("high_freq_factor").as<double>(kPositive);
    if (r.high_freq_factor <= r.low_freq_factor)
      p.fail(
          "high_freq_factor",
          fmt::format("must be more than low_freq_factor ({}): the smoothing band would be empty", r.low_freq_factor));
  }
  if (r.type == "yarn") {
    if (r.factor == 0) r.factor = max_position / r.original_max_position;  // v5: only when factor is None
    if (auto a = p.find("attention_factor")) r.attention_factor = a->as<double>(kPositive);
    r.beta_fast = p.number("beta_fast", r.beta_fast);
    r.beta_slow = p.number("beta_slow", r.beta_slow);
    r.mscale = p.number("mscale", 0, kNonNegative);
    r.mscale_all_dim = p.number("mscale_all_dim", 0, kNonNegative);
    r.truncate = p.flag("truncate", r.truncate);
  }
  const auto read = keys_read(r.type);
  for (const auto& [key, value] : dict->raw().items())
    if (!value.is_null() && std::find(read.begin(), read.end(), key) == read.end())
      p.fail(key, fmt::format("is not read by RoPE type '{}'; refused rather than ignored", r.type));
  return r;
}

void write_rope(const RopeScaling& r, nlohmann::json& config) {
  config["rope_theta"] = r.theta;
  if (r.type == "default") return;
  nlohmann::json s = {{"rope_type", r.type}, {"factor", r.factor}};
  if (r.type == "llama3" || r.type == "yarn") s["original_max_position_embeddings"] = r.original_max_position;
  if (r.type == "llama3") {
    s["low_freq_factor"] = r.low_freq_factor;
    s["high_freq_factor"] = r.high_freq_factor;
  }
  if (r.type == "yarn") {
    if (r.attention_factor) s["attention_factor"] = *r.attention_factor;
    s["beta_fast"] = r.beta_fast;
    s["beta_slow"] = r.beta_slow;
    if (r.mscale != 0) s["mscale"] = r.mscale;
    if (r.mscale_all_dim != 0) s["mscale_all_dim"] = r.mscale_all_dim;
    s["truncate"] = r.truncate;
  }
  config["rope_scaling"] = s;
}

}  // namespace engine
