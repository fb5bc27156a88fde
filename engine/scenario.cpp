// Scenario files (format: scenarios/scenario.schema.json): parsing, defaults,
// and the checks that refuse bad input before anything runs. Every refusal is
// an InputError naming the file, the JSON Pointer of the culprit and why.
#include "engine/scenario.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <tuple>
#include <utility>

#include "engine/compute/model_config.hpp"
#include "engine/error.hpp"

namespace engine {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 2> kFabricTypes = {"full-mesh", "cables"};
constexpr std::array<std::string_view, 2> kArrivals = {"closed", "poisson"};
constexpr std::array<std::string_view, 4> kDistributions = {"fixed", "uniform", "normal", "lognormal"};
// A full mesh has n(n-1)/2 cables: bound n so a hostile file cannot ask for billions.
constexpr int kMaxNodes = 256;

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "unknown model 'x' (did you mean 'y'?); known: a, b", the hint only when a
// known name is a typo away.
template <class Names>
std::string unknown(std::string_view what, std::string_view got, const Names& known) {
  std::string_view best;
  size_t best_distance = 3;
  for (std::string_view name : known) {
    if (size_t d = edit_distance(got, name); d < best_distance) {
      best = name;
      best_distance = d;
    }
  }
  std::string hint = best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
  return fmt::format("unknown {} '{}'{}; known: {}", what, got, hint, fmt::join(known, ", "));
}

std::string pointer(const std::string& base, std::string_view key) {
  std::string out = base + '/';
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

std::string pointer(const std::string& base, size_t index) { return base + '/' + std::to_string(index); }

std::string describe(const json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  std::string text = j.dump();
  return text.size() <= 40 ? text : text.substr(0, 37) + "...";
}

std::string gb(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

// Lower bound for a number: value > bound (strict) or value >= bound.
struct Min {
  double bound;
  bool strict;
};
constexpr Min kAny{-std::numeric_limits<double>::infinity(), false};
constexpr Min kPositive{0, true};
constexpr Min kNonNegative{0, false};
constexpr Min kOne{1, false};

// A JSON value and where it is: what every check needs to refuse it.
class Value {
 public:
  Value(const json& j, std::string path, const std::string& file) : j_(&j), path_(std::move(path)), file_(&file) {}

  const json& raw() const { return *j_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  [[noreturn]] void fail(const std::string& reason) const { throw InputError(*file_, path_, reason); }

  // The one typed accessor: a string, a finite double or an in-range integer,
  // at or above `min`.
  template <class T>
  T as(Min min = kAny) const {
    if constexpr (std::is_same_v<T, std::string>) {
      if (!j_->is_string()) fail("must be a string, got " + describe(*j_));
      return j_->get<std::string>();
    } else {
      T out = number<T>();
      if (out < min.bound || (min.strict && out == min.bound)) {
        fail(fmt::format("must be {} {}, got {}", min.strict ? ">" : ">=", min.bound, out));
      }
      return out;
    }
  }

  std::vector<Value> elements() const {
    if (!j_->is_array()) fail("must be an array, got " + describe(*j_));
    std::vector<Value> out;
    for (size_t i = 0; i < j_->size(); ++i) out.emplace_back((*j_)[i], pointer(path_, i), *file_);
    return out;
  }

 private:
  template <class T>
  T number() const {
    if constexpr (std::is_floating_point_v<T>) {
      if (!j_->is_number()) fail("must be a number, got " + describe(*j_));
      T out = j_->get<T>();
      if (!std::isfinite(out)) fail("must be a finite number");
      return out;
    } else {
      // JSON Schema counts 512.0 as an integer, so the loader does too.
      bool integral =
          j_->is_number_integer() || (j_->is_number_float() && std::trunc(j_->get<double>()) == j_->get<double>());
      if (!integral) fail("must be an integer, got " + describe(*j_));
      bool fits = j_->is_number_unsigned() ? std::in_range<T>(j_->get<std::uint64_t>())
                  : j_->is_number_integer()
                      ? std::in_range<T>(j_->get<std::int64_t>())
                      : std::abs(j_->get<double>()) <= 0x1p53 && std::in_range<T>(std::int64_t(j_->get<double>()));
      if (!fits) {
        fail(fmt::format("must be an integer from {} to {}, got {}", std::numeric_limits<T>::lowest(),
                         std::numeric_limits<T>::max(), describe(*j_)));
      }
      return j_->get<T>();
    }
  }

  const json* j_;
  std::string path_;
  const std::string* file_;
};

// A JSON object being read. It remembers every key asked for, present or not,
// so finish() can refuse the others as typos and list what is allowed.
class Object {
 public:
  explicit Object(Value v) : v_(std::move(v)) {
    if (!v_.raw().is_object()) v_.fail("must be an object, got " + describe(v_.raw()));
  }

  const Value& value() const { return v_; }

  std::optional<Value> find(std::string_view key) {
    asked_.emplace_back(key);
    auto it = v_.raw().find(key);
    if (it == v_.raw().end()) return std::nullopt;
    return Value(*it, pointer(v_.path(), key), v_.file());
  }

  Value need(std::string_view key) {
    if (auto v = find(key)) return *v;
    throw InputError(v_.file(), pointer(v_.path(), key), fmt::format("missing required key '{}'", key));
  }

  template <class T>
  T req(std::string_view key, Min min = kAny) {
    return need(key).as<T>(min);
  }

  template <class T>
  T opt(std::string_view key, T fallback, Min min = kAny) {
    auto v = find(key);
    return v ? v->as<T>(min) : fallback;
  }

  // An optional sub-object; absent reads as {} so its own defaults apply.
  Object section(std::string_view key) {
    static const json empty = json::object();
    auto v = find(key);
    return Object(v ? *v : Value(empty, pointer(v_.path(), key), v_.file()));
  }

  void finish() const {
    for (const auto& [key, _] : v_.raw().items()) {
      if (std::find(asked_.begin(), asked_.end(), key) == asked_.end()) {
        throw InputError(v_.file(), pointer(v_.path(), key), unknown("key", key, asked_));
      }
    }
  }

 private:
  Value v_;
  std::vector<std::string> asked_;
};

// A string that must be one of `known`.
template <class Names>
std::string choice(const Value& v, std::string_view what, const Names& known) {
  auto got = v.as<std::string>();
  if (std::find(std::begin(known), std::end(known), got) == std::end(known)) v.fail(unknown(what, got, known));
  return got;
}

template <class Names>
std::string choice(Object& o, std::string_view key, std::string_view what, const Names& known, std::string fallback) {
  if (auto v = o.find(key)) return choice(*v, what, known);
  // A catalog of one's own may lack the default.
  if (std::find(std::begin(known), std::end(known), fallback) == std::end(known)) {
    throw InputError(o.value().file(), pointer(o.value().path(), key),
                     unknown(fmt::format("default {}", what), fallback, known));
  }
  return fallback;
}

std::vector<std::string> node_names(const Scenario& s) {
  std::vector<std::string> out;
  for (const auto& n : s.nodes) out.push_back(n.name);
  return out;
}

void read_nodes(Object& cluster, Scenario& s, const Catalog& catalog) {
  Value list = cluster.need("nodes");
  auto nodes = list.elements();
  if (nodes.empty()) list.fail("a cluster needs at least one node");
  if (nodes.size() > kMaxNodes) list.fail(fmt::format("at most {} nodes, got {}", kMaxNodes, nodes.size()));
  for (const Value& v : nodes) {
    Object o(v);
    Value name_v = o.need("name");
    NodeSpec node{name_v.as<std::string>(), choice(o.need("hardware"), "hardware", catalog.hardware_names())};
    o.finish();
    bool plain = !node.name.empty() && std::all_of(node.name.begin(), node.name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
    if (!plain) name_v.fail("a node name is letters, digits, '-', '_' or '.' (it is used in \"node:port\")");
    if (int other = s.node_index(node.name); other >= 0) {
      name_v.fail(fmt::format("duplicate node name '{}' (also /cluster/nodes/{})", node.name, other));
    }
    s.nodes.push_back(std::move(node));
  }
}

// One end of a cable that takes a port: where it was written, for messages.
struct Plug {
  int node;
  int port;  // 0: nothing to check (the full mesh numbers its own)
  std::string kind;
  std::string path;
};

// "m1:3" (or "m1" on a switched link) into a node index and a port.
std::pair<int, int> read_end(const Value& v, const Scenario& s, const LinkCard& link) {
  auto text = v.as<std::string>();
  auto colon = text.rfind(':');
  std::string name = text.substr(0, colon);
  int node = s.node_index(name);
  if (node < 0) v.fail(unknown("node", name, node_names(s)));
  if (colon == std::string::npos) {
    if (!link.switched) {
      v.fail(
          fmt::format("needs a port, as in \"{}:1\": {} takes a {} port at each end", name, link.name, link.port_kind));
    }
    return {node, 0};
  }
  if (link.switched) v.fail(fmt::format("{} is switched and takes no port: write \"{}\"", link.name, name));
  std::string_view digits = std::string_view(text).substr(colon + 1);
  int port = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc() || end != digits.data() + digits.size() || port < 1) {
    v.fail(fmt::format("the port after ':' must be a number from 1, got '{}'", digits));
  }
  return {node, port};
}

// Each cable on a point-to-point link takes a port of the link's kind at both
// ends; switched links (Ethernet into a switch) take none.
void check_ports(const std::vector<Plug>& plugs, const Scenario& s, const Catalog& catalog) {
  std::map<std::pair<int, std::string>, int> need;
  for (const auto& p : plugs) ++need[{p.node, p.kind}];
  std::map<std::pair<int, std::string>, int> used;
  std::map<std::tuple<int, std::string, int>, std::string> taken;
  for (const auto& p : plugs) {
    const auto& node = s.nodes[p.node];
    const auto& ports = catalog.hardware(node.hardware).ports;
    auto it = ports.find(p.kind);
    int have = it == ports.end() ? 0 : it->second;
    if (++used[{p.node, p.kind}] > have) {
      throw InputError(s.file, p.path,
                       fmt::format("{} needs {} {} port(s) for its cables, but {} has {} usable", node.name,
                                   need[{p.node, p.kind}], p.kind, node.hardware, have));
    }
    if (p.port == 0) continue;
    if (p.port > have) {
      throw InputError(
          s.file, p.path,
          fmt::format("{} has no {} port {}: {} has ports 1 to {}", node.name, p.kind, p.port, node.hardware, have));
    }
    auto [at, fresh] = taken.try_emplace({p.node, p.kind, p.port}, p.path);
    if (!fresh) {
      throw InputError(s.file, p.path,
                       fmt::format("port {}:{} is already used by the cable at {}", node.name, p.port, at->second));
    }
  }
}

void check_connected(const Value& where, const Scenario& s) {
  std::vector<bool> reached(s.nodes.size(), false);
  std::vector<int> todo{0};
  reached[0] = true;
  while (!todo.empty()) {
    int at = todo.back();
    todo.pop_back();
    for (const auto& c : s.fabric.cables) {
      for (auto [from, to] : {std::pair{c.a, c.b}, std::pair{c.b, c.a}}) {
        if (from == at && !reached[to]) {
          reached[to] = true;
          todo.push_back(to);
        }
      }
    }
  }
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    if (!reached[i]) {
      where.fail(fmt::format("{} is not connected to {} by any chain of cables", s.nodes[i].name, s.nodes[0].name));
    }
  }
}

void read_fabric(Object& cluster, Scenario& s, const Catalog& catalog) {
  Object o = cluster.section("fabric");
  auto links = catalog.link_names();
  s.fabric.type = choice(o, "type", "fabric type", kFabricTypes, "full-mesh");
  s.fabric.link = choice(o, "link", "link", links, "tb5-rdma");
  if (auto v = o.find("secondary_link")) s.fabric.secondary_link = choice(*v, "link", links);
  const LinkCard& main_link = catalog.link(s.fabric.link);
  std::vector<Plug> plugs;
  if (s.fabric.type == "full-mesh") {
    // Ports are numbered per node in the order its cables are generated.
    std::vector<int> next(s.nodes.size(), 1);
    for (int a = 0; a < int(s.nodes.size()); ++a) {
      for (int b = a + 1; b < int(s.nodes.size()); ++b) {
        Cable c{a, b, 0, 0, s.fabric.link};
        if (!main_link.switched) {
          c.port_a = next[a]++;
          c.port_b = next[b]++;
          plugs.push_back({a, 0, main_link.port_kind, o.value().path()});
          plugs.push_back({b, 0, main_link.port_kind, o.value().path()});
        }
        s.fabric.cables.push_back(c);
      }
    }
  } else {
    Value list = o.need("cables");
    for (const Value& v : list.elements()) {
      Object co(v);
      Cable c;
      c.link = choice(co, "link", "link", links, s.fabric.link);
      const LinkCard& link = catalog.link(c.link);
      Value a = co.need("a"), b = co.need("b");
      co.finish();
      std::tie(c.a, c.port_a) = read_end(a, s, link);
      std::tie(c.b, c.port_b) = read_end(b, s, link);
      if (c.a == c.b) b.fail(fmt::format("a cable joins two different nodes; both ends are {}", s.nodes[c.a].name));
      if (!link.switched) {
        plugs.push_back({c.a, c.port_a, link.port_kind, a.path()});
        plugs.push_back({c.b, c.port_b, link.port_kind, b.path()});
      }
      s.fabric.cables.push_back(c);
    }
    check_connected(list, s);
  }
  o.finish();
  check_ports(plugs, s, catalog);
}

const ModelCard& model_of(const Scenario& s, const Catalog& catalog) {
  return s.model_card ? *s.model_card : catalog.model(s.model);
}

// A model directory, relative to the scenario file: its config.json makes the card.
void read_model_dir(const Value& v, Scenario& s) {
  const std::filesystem::path dir = std::filesystem::path(s.file).parent_path() / v.as<std::string>();
  if (!std::filesystem::is_directory(dir)) v.fail(fmt::format("'{}' is not a directory", dir.string()));
  s.model_dir = std::filesystem::absolute(dir).lexically_normal().string();
  s.model_card = load_model_card(s.model_dir);
  s.model = s.model_card->name;
}

void read_model(Object& root, Scenario& s, const Catalog& catalog) {
  Object o(root.need("model"));
  if (auto path = o.find("path")) {
    if (o.find("name")) o.value().fail("give either 'name' (a catalog card) or 'path' (a model directory), not both");
    read_model_dir(*path, s);
  } else {
    s.model = choice(o.need("name"), "model", catalog.model_names());
  }
  const ModelCard& card = model_of(s, catalog);
  std::vector<std::string> quants;
  for (const auto& q : card.quantizations) quants.push_back(q.name);
  const std::string quant_what = fmt::format("quantization of {}", s.model);
  s.quant = s.model_card ? choice(o, "quant", quant_what, quants, quants.front())
                         : choice(o.need("quant"), quant_what, quants);
  o.finish();

  double usable = 0;
  for (const auto& n : s.nodes) {
    const auto& hw = catalog.hardware(n.hardware);
    usable += hw.memory_bytes * hw.usable_memory_fraction;
  }
  double weights = weight_bytes(card, card.quant(s.quant));
  if (weights > usable) {
    o.value().fail(
        fmt::format("{} at {} needs {} of weights, but the cluster has {} usable "
                    "(memory x usable_memory_fraction, summed over nodes): {} short",
                    s.model, s.quant, gb(weights), gb(usable), gb(weights - usable)));
  }
}

void check_parallelism(const Value& v, const Scenario& s, const Catalog& catalog) {
  const ModelCard& m = model_of(s, catalog);
  int n = int(s.nodes.size());
  if (s.parallelism == "tensor" && (m.heads % n != 0 || m.kv_heads % n != 0)) {
    std::vector<int> fits;
    for (int d = 1; d <= std::min(m.heads, m.kv_heads); ++d) {
      if (m.heads % d == 0 && m.kv_heads % d == 0) fits.push_back(d);
    }
    v.fail(
        fmt::format("tensor parallel over all {} nodes needs the attention heads ({}) and KV heads ({}) of {} "
                    "to divide by {}; use \"tensor-uneven\", or {} nodes",
                    n, m.heads, m.kv_heads, s.model, n, fmt::join(fits, ", ")));
  }
  if (s.parallelism == "expert" && !m.moe) {
    v.fail(fmt::format("expert parallel needs a mixture-of-experts model; {} is dense", s.model));
  }
}

Distribution read_tokens(const Value& v) {
  Distribution d;
  if (v.raw().is_number()) {
    d.value = d.min = d.max = v.as<int>(kOne);
    return d;
  }
  if (!v.raw().is_object()) v.fail("must be a token count or a distribution object, got " + describe(v.raw()));
  Object o(v);
  d.kind = choice(o.need("dist"), "distribution", kDistributions);
  if (d.kind == "fixed") {
    d.value = d.min = d.max = o.req<int>("value", kOne);
  } else {
    if (d.kind != "uniform") {
      d.mean = o.req<double>("mean", kPositive);
      d.stddev = o.req<double>("stddev", kNonNegative);
    }
    d.min = o.opt<int>("min", 1, kOne);
    Value max = o.need("max");
    d.max = max.as<int>(kOne);
    if (d.max < d.min) max.fail(fmt::format("max ({}) is below min ({})", d.max, d.min));
  }
  o.finish();
  return d;
}

void read_workload(Object& root, Scenario& s) {
  Object o = root.section("workload");
  Workload& w = s.workload;
  w.requests = o.opt<int>("requests", 1, kOne);
  auto tokens = [&](std::string_view key, int fallback) {
    auto v = o.find(key);
    return v ? read_tokens(*v) : Distribution{"fixed", double(fallback), double(fallback), double(fallback)};
  };
  w.prompt_tokens = tokens("prompt_tokens", 512);
  w.output_tokens = tokens("output_tokens", 128);
  Object arrival = o.section("arrival");
  w.arrival = choice(arrival, "type", "arrival type", kArrivals, "closed");
  if (w.arrival == "closed") {
    w.concurrency = arrival.opt<int>("concurrency", 1, kOne);
  } else {
    w.rate_per_s = arrival.req<double>("rate_per_s", kPositive);
  }
  arrival.finish();
  w.prefill_chunk = o.opt<int>("prefill_chunk", 512, kOne);
  w.max_batch = o.opt<int>("max_batch", 16, kOne);
  Object client = o.section("client");
  w.max_tries = client.opt<int>("max_tries", 3, kOne);
  w.retry_backoff_s = client.opt<double>("retry_backoff_s", 0.1, kNonNegative);
  client.finish();
  o.finish();
}

void read_recovery(Object& root, Scenario& s) {
  Object o = root.section("recovery");
  auto policy = o.find("policy");
  s.recovery = policy ? choice(*policy, "recovery policy", kRecoveryPolicies) : "fail-stop";
  s.heartbeat_s = o.opt<double>("heartbeat_s", 0.05, kPositive);
  auto timeout = o.find("heartbeat_timeout_s");
  s.heartbeat_timeout_s = timeout ? timeout->as<double>(kPositive) : 0.25;
  o.finish();
  if (timeout && s.heartbeat_timeout_s <= s.heartbeat_s) {
    timeout->fail(fmt::format("must exceed heartbeat_s ({} s), or every heartbeat would time out", s.heartbeat_s));
  }
  if (policy && s.recovery == "fallback" && !s.fabric.secondary_link) {
    policy->fail("\"fallback\" needs /cluster/fabric/secondary_link");
  }
}

// "a-b" names the cable(s) between nodes a and b. Node names may hold '-', so
// every split is tried and exactly one must name two nodes.
std::pair<int, int> check_link_target(const Value& v, const Scenario& s) {
  const std::string& t = v.raw().get_ref<const std::string&>();
  std::vector<std::pair<int, int>> found;
  for (auto dash = t.find('-'); dash != std::string::npos; dash = t.find('-', dash + 1)) {
    int a = s.node_index(t.substr(0, dash)), b = s.node_index(t.substr(dash + 1));
    if (a >= 0 && b >= 0) found.emplace_back(a, b);
  }
  if (found.size() != 1) {
    v.fail(fmt::format("{} link target '{}': write \"a-b\" with two node names (nodes: {})",
                       found.empty() ? "unknown" : "ambiguous", t, fmt::join(node_names(s), ", ")));
  }
  int a = found[0].first, b = found[0].second;  // not bindings: clang 14 cannot capture those
  bool cabled = std::any_of(s.fabric.cables.begin(), s.fabric.cables.end(),
                            [&](const Cable& c) { return (c.a == a && c.b == b) || (c.a == b && c.b == a); });
  if (!cabled) v.fail(fmt::format("no cable joins {} and {}", s.nodes[a].name, s.nodes[b].name));
  return {a, b};
}

void read_faults(Object& root, Scenario& s) {
  auto list = root.find("faults");
  if (!list) return;
  for (const Value& v : list->elements()) {
    Object o(v);
    FaultSpec f;
    Value at = o.need("at_s");
    f.at_s = at.as<double>(kNonNegative);
    if (f.at_s >= s.deadline_s) at.fail(fmt::format("the fault would come after the deadline ({} s)", s.deadline_s));
    f.kind = choice(o.need("kind"), "fault kind", kFaultKinds);
    // Which keys a kind takes: its target, and the knobs that mean something for it.
    bool on_link = f.kind.starts_with("link-"), on_node = f.kind.starts_with("node-");
    if (on_link || on_node) {
      Value target = o.need("target");
      f.target = target.as<std::string>();
      if (on_link) std::tie(f.node, f.peer) = check_link_target(target, s);
      if (on_node && (f.node = s.node_index(f.target)) < 0) target.fail(unknown("node", f.target, node_names(s)));
    }
    if (f.kind != "link-up" && f.kind != "node-restart" && f.kind != "rdma-stack-failure") {
      f.duration_s = o.opt<double>("duration_s", 0.0, kNonNegative);
    }
    if (f.kind == "link-degrade" || f.kind == "node-slow") {
      auto factor = f.kind == "node-slow" ? std::optional(o.need("factor")) : o.find("factor");
      if (factor) {
        f.factor = factor->as<double>(kPositive);
        if (f.factor > 1)
          factor->fail(fmt::format("must be at most 1 (the fraction of bandwidth or speed kept), got {}", f.factor));
      }
    }
    if (f.kind == "link-degrade") {
      f.added_latency_s = o.opt<double>("added_latency_s", 0.0, kNonNegative);
      if (f.factor == 1 && f.added_latency_s == 0)
        o.value().fail("link-degrade needs factor < 1 or added_latency_s > 0");
    }
    if (f.kind == "link-flap") {
      f.period_s = o.req<double>("period_s", kPositive);
      Value duty = o.need("duty");
      f.duty = duty.as<double>(kPositive);
      if (f.duty >= 1)
        duty.fail(fmt::format("must be below 1 (the fraction of each period the link is down), got {}", f.duty));
    }
    o.finish();
    s.faults.push_back(std::move(f));
  }
}

void read_expectations(Object& root, Scenario& s) {
  auto expect = root.find("expect");
  if (!expect) return;
  Object metrics(*expect);
  for (const auto& [metric, _] : expect->raw().items()) {
    auto v = metrics.find(metric);
    if (std::find(kMetrics.begin(), kMetrics.end(), metric) == kMetrics.end())
      v->fail(unknown("metric", metric, kMetrics));
    Object o(*v);
    std::map<std::string, double> bounds;
    for (std::string_view op : {"min", "max", "eq"}) {
      if (auto bound = o.find(op)) {
        bounds[std::string(op)] = bound->as<double>();
        s.expectations.push_back({metric, std::string(op), bounds[std::string(op)], bound->path()});
      }
    }
    o.finish();
    if (bounds.empty()) v->fail("needs a bound: \"min\", \"max\" or \"eq\"");
    if (bounds.count("min") && bounds.count("max") && bounds["min"] > bounds["max"]) {
      v->fail(fmt::format("min ({}) is above max ({}): no run can pass", bounds["min"], bounds["max"]));
    }
  }
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error
// at line 3, column 11: " prefix: parse_scenario computes the position itself.
std::string json_reason(const json::exception& e) {
  std::string_view what = e.what();
  if (auto id = what.find("] "); id != std::string_view::npos) what.remove_prefix(id + 2);
  auto colon = what.find(": ");
  if (what.starts_with("parse error") && colon != std::string_view::npos) what.remove_prefix(colon + 2);
  return std::string(what);
}

// The cards StackCard::load can read: catalog/profiles/NAME.json.
std::vector<std::string> profile_names(const Catalog& catalog) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(catalog.dir() + "/profiles", ec)) {
    if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int Scenario::node_index(const std::string& name) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == name) return int(i);
  }
  return -1;
}

nlohmann::ordered_json fault_json(const FaultSpec& f) {
  nlohmann::ordered_json j{{"at_s", f.at_s}, {"kind", f.kind}};
  if (!f.target.empty()) j["target"] = f.target;
  if (f.duration_s > 0) j["duration_s"] = f.duration_s;
  if (f.kind == "link-degrade" || f.kind == "node-slow") j["factor"] = f.factor;
  if (f.added_latency_s > 0) j["added_latency_s"] = f.added_latency_s;
  if (f.kind == "link-flap") {
    j["period_s"] = f.period_s;
    j["duty"] = f.duty;
  }
  return j;
}

Scenario parse_scenario(const std::string& text, const std::string& file, const Catalog& catalog) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    // e.byte counts the bytes read, the culprit last.
    auto head = std::string_view(text).substr(0, e.byte == 0 ? 0 : e.byte - 1);
    size_t line = 1 + std::count(head.begin(), head.end(), '\n');
    size_t newline = head.rfind('\n');
    size_t column = head.size() - (newline == std::string_view::npos ? 0 : newline + 1) + 1;
    throw InputError(file, "", fmt::format("malformed JSON at line {}, column {}: {}", line, column, json_reason(e)));
  } catch (const json::exception& e) {  // a number too large for a double
    throw InputError(file, "", "malformed JSON: " + json_reason(e));
  }

  Scenario s;
  s.file = file;
  Object root(Value(doc, "", s.file));
  root.opt<std::string>("$schema", "");  // lets editors find scenario.schema.json
  s.name = root.opt<std::string>("name", std::filesystem::path(file).stem().string());
  s.description = root.opt<std::string>("description", "");
  s.seed = root.opt<unsigned long long>("seed", 1);

  Object cluster(root.need("cluster"));
  read_nodes(cluster, s, catalog);
  read_fabric(cluster, s, catalog);
  cluster.finish();

  read_model(root, s, catalog);
  if (auto v = root.find("parallelism")) {
    s.parallelism = choice(*v, "parallelism", kParallelisms);
    check_parallelism(*v, s, catalog);
  }
  if (auto v = root.find("profile")) s.profile = choice(*v, "profile", profile_names(catalog));
  read_workload(root, s);
  s.deadline_s = root.opt<double>("deadline_s", 3600, kPositive);
  read_recovery(root, s);
  read_faults(root, s);
  read_expectations(root, s);
  root.finish();
  return s;
}

Scenario load_scenario(const std::string& path, const Catalog& catalog) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_scenario(text.str(), path, catalog);
}

Catalog catalog_for(const Scenario& s, const Catalog& catalog) {
  Catalog out = catalog;
  if (s.model_card) out.add(*s.model_card);
  return out;
}

}  // namespace engine
