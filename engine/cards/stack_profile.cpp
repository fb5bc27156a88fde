#include "engine/cards/stack_profile.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"

namespace engine {

namespace {

// A numeric parameter: its file key, the member it sets and the file unit's
// size in the member's unit (microseconds in the file, seconds in memory).
struct Numeric {
  const char* key;
  double StackProfile::*member;
  double scale;
};

constexpr Numeric kNumeric[] = {
    {"memory_bandwidth_efficiency", &StackProfile::memory_bandwidth_efficiency, 1},
    {"compute_efficiency", &StackProfile::compute_efficiency, 1},
    {"expert_compute_efficiency", &StackProfile::expert_compute_efficiency, 1},
    {"per_kernel_overhead_us", &StackProfile::per_kernel_overhead_s, 1e-6},
    {"per_expert_overhead_us", &StackProfile::per_expert_overhead_s, 1e-6},
    {"per_message_overhead_us", &StackProfile::per_message_overhead_s, 1e-6},
};

const Numeric& numeric(const std::string& key) {
  for (const Numeric& n : kNumeric)
    if (key == n.key) return n;
  throw std::out_of_range("no profile parameter \"" + key + "\"");
}

// Every parameter is {"value": x, "unit": "...", "fit": [lower, upper]} (fit
// optional) so the file documents itself.
template <typename T>
T parameter(JsonObject& card, std::string_view key, T fallback, Min min = kAny) {
  auto v = card.find(key);
  if (!v) return fallback;
  JsonObject p(*v);
  p.only({"value", "unit", "fit"});
  return p.need("value").as<T>(min);
}

}  // namespace

const std::vector<std::string>& StackProfile::numeric_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const Numeric& n : kNumeric) out.push_back(n.key);
    return out;
  }();
  return keys;
}

double StackProfile::get(const std::string& key) const {
  const Numeric& n = numeric(key);
  return this->*n.member / n.scale;
}

void StackProfile::set(const std::string& key, double value) {
  const Numeric& n = numeric(key);
  this->*n.member = value * n.scale;
}

namespace {

// Profiles may chain through "based_on"; a chain this long is a cycle.
constexpr int kMaxBasedOn = 8;

StackProfile load_profile(const std::string& catalog_dir, const std::string& name, int depth) {
  const std::string file = catalog_dir + "/profiles/" + name + ".json";
  if (!std::filesystem::is_regular_file(file)) throw InputError(file, "", "no such profile '" + name + "'");
  const nlohmann::json j = load_json(file);
  JsonObject card(JsonValue(j, "", file));
  card.opt<std::string>("name", name);
  card.opt<std::string>("about", "");
  // "based_on": start from another profile's values; this file's keys override them.
  auto based_on = card.find("based_on");
  if (based_on && depth >= kMaxBasedOn) based_on->fail("based_on chain too long (a cycle?)");
  const std::string parent = based_on ? parameter(card, "based_on", std::string()) : "";
  StackProfile p = based_on ? load_profile(catalog_dir, parent, depth + 1) : StackProfile{};
  p.name = name;
  p.based_on = parent;
  for (const Numeric& n : kNumeric) p.set(n.key, parameter(card, n.key, p.get(n.key), kNonNegative));
  if (!based_on && !j.contains("expert_compute_efficiency")) p.expert_compute_efficiency = p.compute_efficiency;
  p.stage_round_trip = parameter(card, "stage_round_trip", p.stage_round_trip);
  card.finish();
  for (const char* key : {"memory_bandwidth_efficiency", "compute_efficiency", "expert_compute_efficiency"})
    if (const double v = p.get(key); v <= 0 || v > 1)
      throw InputError(file, j.contains(key) ? json_pointer(json_pointer("", key), "value") : "",
                       fmt::format("must be in (0, 1], got {}", v));
  return p;
}

}  // namespace

StackProfile StackProfile::load(const std::string& catalog_dir, const std::string& name) {
  return load_profile(catalog_dir, name, 0);
}

}  // namespace engine
