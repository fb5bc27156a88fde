#include "engine/cards/catalog.hpp"

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

#include "engine/base/build_info.hpp"
#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"
#include "engine/cards/model_math.hpp"

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

constexpr std::string_view kPortKinds[] = {"thunderbolt", "qsfp", "ethernet"};

// Card fields as engine/base/json_input reads them; a card's numbers are integers
// from `min`, finite numbers above 0, or at or above 0.
int count(JsonObject& o, std::string_view key, int min) { return o.req<int>(key, Min{double(min), false}); }
double positive(JsonObject& o, std::string_view key) { return o.req<double>(key, kPositive); }

std::string text(JsonObject& o, std::string_view key) {
  const JsonValue v = o.need(key);
  auto s = v.as<std::string>();
  if (s.empty()) v.fail("must not be empty");
  return s;
}

std::vector<JsonValue> nonempty_list(JsonObject& o, std::string_view key) {
  const JsonValue v = o.need(key);
  auto list = v.elements();
  if (list.empty()) v.fail("must not be empty");
  return list;
}

// The card's name is its file name; a "name" field, if present, must agree.
std::string card_name(JsonObject& card, const fs::path& file) {
  const std::string stem = file.stem().string();
  if (auto v = card.find("name"); v && v->as<std::string>() != stem) {
    v->fail(fmt::format("\"{}\" does not match the file name \"{}\"", v->as<std::string>(), stem));
  }
  return stem;
}

// Free-text fields ("source", "notes") are for readers; only their type is checked.
void check_text(JsonObject& card, std::string_view key, bool required) {
  if (required || card.value().raw().contains(key)) text(card, key);
}

MoeShape parse_moe(JsonObject o, int layers) {
  o.only({"experts", "active_experts", "shared_experts", "expert_ffn", "dense_layers"});
  MoeShape e;
  e.experts = count(o, "experts", 1);
  e.active_experts = count(o, "active_experts", 1);
  if (e.active_experts > e.experts) {
    o.need("active_experts").fail(fmt::format("must not exceed experts ({})", e.experts));
  }
  e.shared_experts = count(o, "shared_experts", 0);
  e.expert_ffn = count(o, "expert_ffn", 1);
  e.dense_layers = count(o, "dense_layers", 0);
  if (e.dense_layers > layers) {
    o.need("dense_layers").fail(fmt::format("must not exceed layers ({})", layers));
  }
  return e;
}

MlaShape parse_mla(JsonObject o) {
  o.only({"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  MlaShape a;
  a.q_lora_rank = count(o, "q_lora_rank", 0);
  a.kv_lora_rank = count(o, "kv_lora_rank", 1);
  a.qk_nope_head_dim = count(o, "qk_nope_head_dim", 1);
  a.qk_rope_head_dim = count(o, "qk_rope_head_dim", 1);
  a.v_head_dim = count(o, "v_head_dim", 1);
  return a;
}

std::vector<Quantization> parse_quantizations(JsonObject& card) {
  std::vector<Quantization> out;
  std::set<std::string> seen;
  for (const JsonValue& v : nonempty_list(card, "quantizations")) {
    JsonObject o(v);
    o.only({"name", "bits_per_weight", "dense_bits_per_weight"});
    const JsonValue bits = o.need("bits_per_weight");
    Quantization q{text(o, "name"), bits.as<double>(kPositive)};
    if (q.bits_per_weight > 32) bits.fail("must be at most 32");
    if (auto dense = o.find("dense_bits_per_weight")) {
      q.dense_bits_per_weight = dense->as<double>(kPositive);
      if (q.dense_bits_per_weight > 32) dense->fail("must be at most 32");
    }
    if (!seen.insert(q.name).second) o.need("name").fail(fmt::format("duplicate \"{}\"", q.name));
    out.push_back(std::move(q));
  }
  return out;
}

// Cross-field rules: they make the derived math meaningful.
void check_model(JsonObject& card, const ModelCard& m) {
  if (m.heads % m.kv_heads != 0) {
    card.need("kv_heads").fail(fmt::format("must divide heads ({})", m.heads));
  }
  if (m.mla && m.head_dim != m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim) {
    card.need("head_dim")
        .fail(fmt::format("must equal mla qk_nope_head_dim + qk_rope_head_dim ({})",
                          m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim));
  }
  const bool has_dense_layers = !m.moe || m.moe->dense_layers > 0;
  if (has_dense_layers && m.ffn == 0) card.need("ffn").fail("must be positive: the model has dense layers");
  const auto quants = card.need("quantizations").elements();
  for (std::size_t i = 0; i < m.quantizations.size(); ++i)
    if (const Quantization& q = m.quantizations[i]; q.dense_bits_per_weight > 0 && !(routed_expert_bits(m, q) > 0))
      JsonObject(quants[i])
          .need("dense_bits_per_weight")
          .fail(fmt::format("leaves the routed experts {:.3g} bits a weight to keep the average of {}: a mixed quant "
                            "needs routed experts to hold the rest of the average",
                            routed_expert_bits(m, q), q.bits_per_weight));
}

ModelCard parse_model(JsonObject card, const fs::path& file) {
  card.only({"name", "source", "notes", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
             "tied_embeddings", "moe", "mla", "kv_bytes_per_element", "quantizations"});
  ModelCard m;
  m.name = card_name(card, file);
  check_text(card, "source", true);
  check_text(card, "notes", false);
  m.layers = count(card, "layers", 1);
  m.hidden = count(card, "hidden", 1);
  m.heads = count(card, "heads", 1);
  m.kv_heads = count(card, "kv_heads", 1);
  m.head_dim = count(card, "head_dim", 1);
  m.ffn = count(card, "ffn", 0);
  m.vocab = count(card, "vocab", 1);
  m.tied_embeddings = card.opt<bool>("tied_embeddings", false);
  if (auto v = card.find("moe")) m.moe = parse_moe(JsonObject(*v), m.layers);
  if (auto v = card.find("mla")) m.mla = parse_mla(JsonObject(*v));
  m.kv_bytes_per_element = card.opt<double>("kv_bytes_per_element", m.kv_bytes_per_element, kPositive);
  m.quantizations = parse_quantizations(card);
  check_model(card, m);
  return m;
}

std::map<std::string, int> parse_ports(JsonObject o) {
  o.only({"thunderbolt", "qsfp"});
  std::map<std::string, int> ports;
  for (const char* kind : {"thunderbolt", "qsfp"})
    if (auto v = o.find(kind)) ports[kind] = v->as<int>(kNonNegative);
  return ports;
}

HardwareCard parse_hardware(JsonObject card, const fs::path& file) {
  card.only({"name", "notes", "memory_gb", "usable_memory_fraction", "memory_bandwidth_gbs", "peak_tflops_fp16",
             "ports", "ssd_read_gbs", "idle_watts", "loaded_watts", "price_usd", "boot_s"});
  HardwareCard h;
  h.name = card_name(card, file);
  check_text(card, "notes", false);
  h.memory_bytes = positive(card, "memory_gb") * 1e9;
  h.usable_memory_fraction = positive(card, "usable_memory_fraction");
  if (h.usable_memory_fraction > 1) card.need("usable_memory_fraction").fail("must be at most 1");
  h.memory_bandwidth = positive(card, "memory_bandwidth_gbs") * 1e9;
  h.peak_flops = positive(card, "peak_tflops_fp16") * 1e12;
  h.ports = parse_ports(JsonObject(card.need("ports")));
  h.ssd_read_bandwidth = positive(card, "ssd_read_gbs") * 1e9;
  h.idle_watts = positive(card, "idle_watts");
  h.loaded_watts = positive(card, "loaded_watts");
  if (h.loaded_watts < h.idle_watts) card.need("loaded_watts").fail("must be at least idle_watts");
  h.price_usd = positive(card, "price_usd");
  h.boot_s = positive(card, "boot_s");
  return h;
}

std::vector<WireTime> parse_wire_time_by_size(JsonObject& card) {
  std::vector<WireTime> out;
  const auto v = card.find("wire_time_by_size");
  if (!v) return out;
  for (const JsonValue& e : v->elements()) {
    JsonObject point(e);
    point.only({"bytes", "us"});
    const WireTime p{double(count(point, "bytes", 1)), point.req<double>("us", kNonNegative) * 1e-6};
    if (!out.empty() && p.bytes <= out.back().bytes)
      e.fail(fmt::format("bytes must increase from one point to the next: {} after {}", p.bytes, out.back().bytes));
    if (!out.empty() && p.seconds < out.back().seconds)
      e.fail(fmt::format("a message of {} bytes would cross in {:.3g} us, faster than one of {} in {:.3g} us", p.bytes,
                         p.seconds * 1e6, out.back().bytes, out.back().seconds * 1e6));
    out.push_back(p);
  }
  return out;
}

LinkCard parse_link(JsonObject card, const fs::path& file) {
  card.only({"name", "notes", "bandwidth_gbps", "latency_us", "per_message_overhead_us", "frame_bytes",
             "frame_header_bytes", "port_kind", "switched", "wire_time_by_size"});
  LinkCard l;
  l.name = card_name(card, file);
  check_text(card, "notes", false);
  l.bandwidth = positive(card, "bandwidth_gbps") * 1e9 / 8;
  l.latency_s = positive(card, "latency_us") * 1e-6;
  l.per_message_overhead_s = card.req<double>("per_message_overhead_us", kNonNegative) * 1e-6;
  l.frame_bytes = count(card, "frame_bytes", 1);
  l.frame_header_bytes = card.opt<double>("frame_header_bytes", 0, kNonNegative);
  l.port_kind = choice(card.need("port_kind"), "port kind", kPortKinds);
  l.switched = card.opt<bool>("switched", false);
  l.wire_time_by_size = parse_wire_time_by_size(card);
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
    const json j = load_json(name);
    Card card = parse(JsonObject(JsonValue(j, "", name)), file);
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
  const json j = load_json(path);
  const JsonObject card(JsonValue(j, "", path));
  if (j.contains("memory_gb"))
    add(parse_hardware(card, path));
  else if (j.contains("bandwidth_gbps"))
    add(parse_link(card, path));
  else
    throw InputError(path, "", "not a hardware card (memory_gb, ...) nor a link card (bandwidth_gbps, ...)");
}

const Catalog& Catalog::builtin() {
  static const Catalog catalog = [] {
    const char* env = std::getenv("MESHINFER_CATALOG");
    return load(env && *env ? env : std::string(kSourceDir) + "/scenarios/catalog");
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
