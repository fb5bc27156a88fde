#include "engine/catalog.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string_view>

#include "engine/error.hpp"

namespace engine {

namespace {

std::string join_names(const std::vector<std::string>& names) {
  return names.empty() ? std::string("(none)") : fmt::format("{}", fmt::join(names, ", "));
}

template <typename Card>
std::vector<std::string> names_of(const std::map<std::string, Card>& cards) {
  std::vector<std::string> names;
  for (const auto& [name, card] : cards) names.push_back(name);
  return names;
}

template <typename Card>
const Card& find_card(const std::map<std::string, Card>& cards, const std::string& name, std::string_view kind) {
  auto it = cards.find(name);
  if (it == cards.end()) {
    throw std::out_of_range(fmt::format("unknown {} \"{}\"; known: {}", kind, name, join_names(names_of(cards))));
  }
  return it->second;
}

}  // namespace

const Quantization& ModelCard::quant(const std::string& q) const {
  for (const Quantization& x : quantizations) {
    if (x.name == q) return x;
  }
  std::vector<std::string> known;
  for (const Quantization& x : quantizations) known.push_back(x.name);
  throw std::out_of_range(
      fmt::format("model \"{}\" has no quantization \"{}\"; known: {}", name, q, join_names(known)));
}

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// One JSON object of a card with its file and JSON path, so every complaint
// names where it comes from.
class Obj {
 public:
  Obj(std::string file, const json& j, std::string path) : file_(std::move(file)), j_(j), path_(std::move(path)) {
    if (!j_.is_object()) throw InputError(file_, path_, "expected an object");
  }

  [[noreturn]] void fail(std::string_view key, const std::string& reason) const {
    throw InputError(file_, path_of(key), reason);
  }

  // Typos in optional fields would silently fall back to defaults: refuse them.
  void allow_only(std::initializer_list<std::string_view> keys) const {
    for (const auto& [key, value] : j_.items()) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        fail(key, fmt::format("unknown field; expected one of: {}", fmt::join(keys, ", ")));
      }
    }
  }

  bool has(std::string_view key) const { return j_.contains(key); }

  int count(std::string_view key, int min) const {
    const json& v = at(key);
    if (!v.is_number_integer()) fail(key, "expected an integer");
    constexpr auto int_max = std::numeric_limits<int>::max();
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(int_max)) {
      fail(key, "too large");
    }
    const std::int64_t x = v.get<std::int64_t>();
    if (x < min || x > int_max) fail(key, fmt::format("must be an integer >= {}, got {}", min, x));
    return int(x);
  }

  double number(std::string_view key) const {
    const json& v = at(key);
    if (!v.is_number()) fail(key, "expected a number");
    return v.get<double>();
  }

  double positive(std::string_view key) const {
    const double x = number(key);
    if (!(x > 0) || !std::isfinite(x)) fail(key, fmt::format("must be positive, got {}", x));
    return x;
  }

  double non_negative(std::string_view key) const {
    const double x = number(key);
    if (!(x >= 0) || !std::isfinite(x)) fail(key, fmt::format("must be >= 0, got {}", x));
    return x;
  }

  bool boolean(std::string_view key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& v = at(key);
    if (!v.is_boolean()) fail(key, "expected true or false");
    return v.get<bool>();
  }

  std::string string(std::string_view key) const {
    const json& v = at(key);
    if (!v.is_string()) fail(key, "expected a string");
    const auto s = v.get<std::string>();
    if (s.empty()) fail(key, "must not be empty");
    return s;
  }

  Obj object(std::string_view key) const { return Obj(file_, at(key), path_of(key)); }

  std::vector<Obj> objects(std::string_view key) const {
    const json& v = at(key);
    if (!v.is_array()) fail(key, "expected an array");
    if (v.empty()) fail(key, "must not be empty");
    std::vector<Obj> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      out.emplace_back(file_, v[i], fmt::format("{}/{}", path_of(key), i));
    }
    return out;
  }

  const json& raw() const { return j_; }

 private:
  const json& at(std::string_view key) const {
    auto it = j_.find(key);
    if (it == j_.end()) fail(key, "missing field");
    return *it;
  }
  std::string path_of(std::string_view key) const { return fmt::format("{}/{}", path_, key); }

  std::string file_;
  const json& j_;
  std::string path_;
};

json read_json(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file, "", "cannot open file");
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError(file, "", fmt::format("invalid JSON: {}", e.what()));
  }
}

// The card's name is its file name; a "name" field, if present, must agree.
std::string card_name(const Obj& card, const fs::path& file) {
  const std::string stem = file.stem().string();
  if (card.has("name") && card.string("name") != stem) {
    card.fail("name", fmt::format("\"{}\" does not match the file name \"{}\"", card.string("name"), stem));
  }
  return stem;
}

// Free-text fields ("source", "notes") are for readers; only their type is checked.
void check_text(const Obj& card, std::string_view key, bool required) {
  if (required || card.has(key)) card.string(key);
}

MoeShape parse_moe(const Obj& o, int layers) {
  o.allow_only({"experts", "active_experts", "shared_experts", "expert_ffn", "dense_layers"});
  MoeShape e;
  e.experts = o.count("experts", 1);
  e.active_experts = o.count("active_experts", 1);
  if (e.active_experts > e.experts) {
    o.fail("active_experts", fmt::format("must not exceed experts ({})", e.experts));
  }
  e.shared_experts = o.count("shared_experts", 0);
  e.expert_ffn = o.count("expert_ffn", 1);
  e.dense_layers = o.count("dense_layers", 0);
  if (e.dense_layers > layers) {
    o.fail("dense_layers", fmt::format("must not exceed layers ({})", layers));
  }
  return e;
}

MlaShape parse_mla(const Obj& o) {
  o.allow_only({"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  MlaShape a;
  a.q_lora_rank = o.count("q_lora_rank", 0);
  a.kv_lora_rank = o.count("kv_lora_rank", 1);
  a.qk_nope_head_dim = o.count("qk_nope_head_dim", 1);
  a.qk_rope_head_dim = o.count("qk_rope_head_dim", 1);
  a.v_head_dim = o.count("v_head_dim", 1);
  return a;
}

std::vector<Quantization> parse_quantizations(const Obj& card) {
  std::vector<Quantization> out;
  std::set<std::string> seen;
  for (const Obj& o : card.objects("quantizations")) {
    o.allow_only({"name", "bits_per_weight"});
    Quantization q{o.string("name"), o.positive("bits_per_weight")};
    if (q.bits_per_weight > 32) o.fail("bits_per_weight", "must be at most 32");
    if (!seen.insert(q.name).second) o.fail("name", fmt::format("duplicate \"{}\"", q.name));
    out.push_back(std::move(q));
  }
  return out;
}

// Cross-field rules: they make the derived math meaningful.
void check_model(const Obj& card, const ModelCard& m) {
  if (m.heads % m.kv_heads != 0) {
    card.fail("kv_heads", fmt::format("must divide heads ({})", m.heads));
  }
  if (m.mla && m.head_dim != m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim) {
    card.fail("head_dim", fmt::format("must equal mla qk_nope_head_dim + qk_rope_head_dim ({})",
                                      m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim));
  }
  const bool has_dense_layers = !m.moe || m.moe->dense_layers > 0;
  if (has_dense_layers && m.ffn == 0) card.fail("ffn", "must be positive: the model has dense layers");
}

ModelCard parse_model(const Obj& card, const fs::path& file) {
  card.allow_only({"name", "source", "notes", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
                   "tied_embeddings", "moe", "mla", "kv_bytes_per_element", "quantizations"});
  ModelCard m;
  m.name = card_name(card, file);
  check_text(card, "source", true);
  check_text(card, "notes", false);
  m.layers = card.count("layers", 1);
  m.hidden = card.count("hidden", 1);
  m.heads = card.count("heads", 1);
  m.kv_heads = card.count("kv_heads", 1);
  m.head_dim = card.count("head_dim", 1);
  m.ffn = card.count("ffn", 0);
  m.vocab = card.count("vocab", 1);
  m.tied_embeddings = card.boolean("tied_embeddings", false);
  if (card.has("moe")) m.moe = parse_moe(card.object("moe"), m.layers);
  if (card.has("mla")) m.mla = parse_mla(card.object("mla"));
  if (card.has("kv_bytes_per_element")) m.kv_bytes_per_element = card.positive("kv_bytes_per_element");
  m.quantizations = parse_quantizations(card);
  check_model(card, m);
  return m;
}

std::map<std::string, int> parse_ports(const Obj& o) {
  o.allow_only({"thunderbolt", "qsfp"});
  std::map<std::string, int> ports;
  for (const auto& [kind, value] : o.raw().items()) ports[kind] = o.count(kind, 0);
  return ports;
}

HardwareCard parse_hardware(const Obj& card, const fs::path& file) {
  card.allow_only({"name", "notes", "memory_gb", "usable_memory_fraction", "memory_bandwidth_gbs", "peak_tflops_fp16",
                   "ports", "ssd_read_gbs", "idle_watts", "loaded_watts", "price_usd", "boot_s"});
  HardwareCard h;
  h.name = card_name(card, file);
  check_text(card, "notes", false);
  h.memory_bytes = card.positive("memory_gb") * 1e9;
  h.usable_memory_fraction = card.positive("usable_memory_fraction");
  if (h.usable_memory_fraction > 1) card.fail("usable_memory_fraction", "must be at most 1");
  h.memory_bandwidth = card.positive("memory_bandwidth_gbs") * 1e9;
  h.peak_flops = card.positive("peak_tflops_fp16") * 1e12;
  h.ports = parse_ports(card.object("ports"));
  h.ssd_read_bandwidth = card.positive("ssd_read_gbs") * 1e9;
  h.idle_watts = card.positive("idle_watts");
  h.loaded_watts = card.positive("loaded_watts");
  if (h.loaded_watts < h.idle_watts) card.fail("loaded_watts", "must be at least idle_watts");
  h.price_usd = card.positive("price_usd");
  h.boot_s = card.positive("boot_s");
  return h;
}

LinkCard parse_link(const Obj& card, const fs::path& file) {
  card.allow_only({"name", "notes", "bandwidth_gbps", "latency_us", "per_message_overhead_us", "frame_bytes",
                   "port_kind", "switched"});
  LinkCard l;
  l.name = card_name(card, file);
  check_text(card, "notes", false);
  l.bandwidth = card.positive("bandwidth_gbps") * 1e9 / 8;
  l.latency_s = card.positive("latency_us") * 1e-6;
  l.per_message_overhead_s = card.non_negative("per_message_overhead_us") * 1e-6;
  l.frame_bytes = card.count("frame_bytes", 1);
  l.port_kind = card.string("port_kind");
  if (l.port_kind != "thunderbolt" && l.port_kind != "qsfp" && l.port_kind != "ethernet") {
    card.fail("port_kind", fmt::format("\"{}\" is not one of: thunderbolt, qsfp, ethernet", l.port_kind));
  }
  l.switched = card.boolean("switched", false);
  return l;
}

// Reads every NAME.json of `dir/sub` in name order; a missing sub-folder is empty.
template <typename Card, typename Parse>
std::map<std::string, Card> load_cards(const fs::path& dir, const char* sub, Parse parse) {
  std::vector<fs::path> files;
  const fs::path folder = dir / sub;
  if (fs::is_directory(folder)) {
    for (const auto& entry : fs::directory_iterator(folder)) {
      if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::map<std::string, Card> cards;
  for (const fs::path& file : files) {
    const std::string name = file.string();
    const json j = read_json(name);
    Card card = parse(Obj(name, j, ""), file);
    cards.emplace(card.name, std::move(card));
  }
  return cards;
}

}  // namespace

Catalog Catalog::load(const std::string& dir) {
  if (!fs::is_directory(dir)) throw InputError(dir, "", "catalog directory not found");
  Catalog c;
  c.dir_ = dir;
  c.models_ = load_cards<ModelCard>(dir, "models", parse_model);
  c.hardware_ = load_cards<HardwareCard>(dir, "hardware", parse_hardware);
  c.links_ = load_cards<LinkCard>(dir, "links", parse_link);
  return c;
}

void Catalog::add_card_file(const std::string& path) {
  const json j = read_json(path);
  const Obj card(path, j, "");
  if (j.is_object() && j.contains("memory_gb"))
    add(parse_hardware(card, path));
  else if (j.is_object() && j.contains("bandwidth_gbps"))
    add(parse_link(card, path));
  else
    throw InputError(path, "", "not a hardware card (memory_gb, ...) nor a link card (bandwidth_gbps, ...)");
}

const Catalog& Catalog::builtin() {
  static const Catalog catalog = [] {
    const char* env = std::getenv("MESHINFER_CATALOG");
    return load(env && *env ? env : MESHINFER_SOURCE_DIR "/scenarios/catalog");
  }();
  return catalog;
}

const ModelCard& Catalog::model(const std::string& name) const { return find_card(models_, name, "model"); }
const HardwareCard& Catalog::hardware(const std::string& name) const { return find_card(hardware_, name, "hardware"); }
const LinkCard& Catalog::link(const std::string& name) const { return find_card(links_, name, "link"); }

std::vector<std::string> Catalog::model_names() const { return names_of(models_); }
std::vector<std::string> Catalog::hardware_names() const { return names_of(hardware_); }
std::vector<std::string> Catalog::link_names() const { return names_of(links_); }

}  // namespace engine
