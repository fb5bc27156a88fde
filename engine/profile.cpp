#include "engine/profile.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/error.hpp"

namespace engine {

namespace {

// Every parameter is {"value": x, "unit": "..."} so the file documents itself.
template <typename T>
T parameter(const nlohmann::json& j, const std::string& file, const std::string& key, T fallback) {
  if (!j.contains(key)) return fallback;
  const auto& p = j.at(key);
  if (!p.is_object() || !p.contains("value")) throw InputError(file, "/" + key, "expected {\"value\": ..., \"unit\": \"...\"}");
  try {
    return p.at("value").get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(file, "/" + key + "/value", "wrong type");
  }
}

}  // namespace

BackendProfile BackendProfile::load(const std::string& catalog_dir, const std::string& name) {
  const std::string file = catalog_dir + "/profiles/" + name + ".json";
  std::ifstream in(file);
  if (!in) throw InputError(file, "", "no such profile '" + name + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(file, "", e.what());
  }
  BackendProfile p;
  p.name = name;
  p.memory_bandwidth_efficiency = parameter(j, file, "memory_bandwidth_efficiency", p.memory_bandwidth_efficiency);
  p.compute_efficiency = parameter(j, file, "compute_efficiency", p.compute_efficiency);
  p.per_layer_overhead_s = parameter(j, file, "per_layer_overhead_us", 0.0) * 1e-6;
  p.per_op_overhead_s = parameter(j, file, "per_op_overhead_us", 0.0) * 1e-6;
  p.per_message_overhead_s = parameter(j, file, "per_message_overhead_us", 0.0) * 1e-6;
  p.stage_round_trip = parameter(j, file, "stage_round_trip", false);
  for (double v : {p.memory_bandwidth_efficiency, p.compute_efficiency})
    if (v <= 0 || v > 1) throw InputError(file, "", "efficiencies must be in (0, 1]");
  return p;
}

}  // namespace engine
