#include "engine/stack_card.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/error.hpp"

namespace engine {

namespace {

// A numeric parameter: its file key, the member it sets and the file unit's
// size in the member's unit (microseconds in the file, seconds in memory).
struct Numeric {
  const char* key;
  double StackCard::*member;
  double scale;
};

constexpr Numeric kNumeric[] = {
    {"memory_bandwidth_efficiency", &StackCard::memory_bandwidth_efficiency, 1},
    {"compute_efficiency", &StackCard::compute_efficiency, 1},
    {"expert_compute_efficiency", &StackCard::expert_compute_efficiency, 1},
    {"per_expert_overhead_us", &StackCard::per_expert_overhead_s, 1e-6},
    {"per_layer_overhead_us", &StackCard::per_layer_overhead_s, 1e-6},
    {"per_op_overhead_us", &StackCard::per_op_overhead_s, 1e-6},
    {"per_message_overhead_us", &StackCard::per_message_overhead_s, 1e-6},
};

const Numeric& numeric(const std::string& key) {
  for (const Numeric& n : kNumeric)
    if (key == n.key) return n;
  throw std::out_of_range("no profile parameter \"" + key + "\"");
}

// Every parameter is {"value": x, "unit": "..."} so the file documents itself.
template <typename T>
T parameter(const nlohmann::json& j, const std::string& file, const std::string& key, T fallback) {
  if (!j.contains(key)) return fallback;
  const auto& p = j.at(key);
  if (!p.is_object() || !p.contains("value"))
    throw InputError(file, "/" + key, "expected {\"value\": ..., \"unit\": \"...\"}");
  try {
    return p.at("value").get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(file, "/" + key + "/value", "wrong type");
  }
}

}  // namespace

const std::vector<std::string>& StackCard::numeric_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const Numeric& n : kNumeric) out.push_back(n.key);
    return out;
  }();
  return keys;
}

double StackCard::get(const std::string& key) const {
  const Numeric& n = numeric(key);
  return this->*n.member / n.scale;
}

void StackCard::set(const std::string& key, double value) {
  const Numeric& n = numeric(key);
  this->*n.member = value * n.scale;
}

namespace {

// Profiles may chain through "based_on"; a chain this long is a cycle.
constexpr int kMaxBasedOn = 8;

StackCard load_profile(const std::string& catalog_dir, const std::string& name, int depth) {
  const std::string file = catalog_dir + "/profiles/" + name + ".json";
  std::ifstream in(file);
  if (!in) throw InputError(file, "", "no such profile '" + name + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(file, "", e.what());
  }
  if (depth > kMaxBasedOn) throw InputError(file, "/based_on", "based_on chain too long (a cycle?)");
  // "based_on": start from another profile's values; this file's keys override them.
  const bool based = j.contains("based_on");
  StackCard p =
      based ? load_profile(catalog_dir, parameter(j, file, "based_on", std::string()), depth + 1) : StackCard{};
  p.name = name;
  for (const Numeric& n : kNumeric) p.set(n.key, parameter(j, file, n.key, p.get(n.key)));
  if (!based && !j.contains("expert_compute_efficiency")) p.expert_compute_efficiency = p.compute_efficiency;
  p.stage_round_trip = parameter(j, file, "stage_round_trip", p.stage_round_trip);
  for (double v : {p.memory_bandwidth_efficiency, p.compute_efficiency, p.expert_compute_efficiency})
    if (v <= 0 || v > 1) throw InputError(file, "", "efficiencies must be in (0, 1]");
  return p;
}

}  // namespace

StackCard StackCard::load(const std::string& catalog_dir, const std::string& name) {
  return load_profile(catalog_dir, name, 0);
}

}  // namespace engine
