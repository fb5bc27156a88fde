// Scenario files (format: scenarios/scenario.schema.json): parsing, defaults,
// and the checks that refuse bad input before anything runs. Every refusal is
// an InputError naming the file, the JSON Pointer of the culprit and why.
#include "engine/input/scenario_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>

#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"
#include "engine/cards/model_math.hpp"
#include "engine/checkpoint/config_card.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/weight_layout.hpp"
#include "engine/input/request_trace.hpp"
#include "engine/input/scenario_cluster.hpp"

namespace engine {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 2> kArrivals = {"closed", "poisson"};
constexpr std::array<std::string_view, 4> kDistributions = {"fixed", "uniform", "normal", "lognormal"};

std::string gb(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

const ModelCard& model_of(const Scenario& s, const Catalog& catalog) {
  return s.model_card ? *s.model_card : catalog.model(s.model);
}

// A model by path, relative to the scenario file. A directory is computed
// from its weights (CpuBackend; every tensor checked now, so a missing file is
// refused rather than simulated); a config.json alone makes a card that is
// simulated as a catalog card is (any type engine/checkpoint/config_card plans).
void read_model_path(const JsonValue& v, Scenario& s) {
  const std::filesystem::path path = std::filesystem::path(s.file).parent_path() / v.as<std::string>();
  if (std::filesystem::is_regular_file(path)) {
    s.model_card = config_card(path.string());
  } else if (std::filesystem::is_directory(path)) {
    s.model_dir = std::filesystem::absolute(path).lexically_normal().string();
    s.model_card = load_model_card(s.model_dir);
  } else {
    v.fail(
        fmt::format("'{}' is not a directory (a model computed from its weights) nor a config.json (a model "
                    "planned from its card)",
                    path.string()));
  }
  s.model = s.model_card->name;
}

void read_model(JsonObject& root, Scenario& s, const Catalog& catalog) {
  JsonObject o(root.need("model"));
  if (auto path = o.find("path")) {
    if (o.find("name"))
      o.value().fail("give either 'name' (a catalog card) or 'path' (a model directory or config.json), not both");
    read_model_path(*path, s);
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

void check_parallelism(const JsonValue& v, const Scenario& s, const Catalog& catalog) {
  const ModelCard& m = model_of(s, catalog);
  int n = int(s.nodes.size());
  if (s.parallelism == Strategy::kTensor && (m.heads % n != 0 || m.kv_heads % n != 0)) {
    std::vector<int> fits;
    for (int d = 1; d <= std::min(m.heads, m.kv_heads); ++d) {
      if (m.heads % d == 0 && m.kv_heads % d == 0) fits.push_back(d);
    }
    v.fail(
        fmt::format("tensor parallel over all {} nodes needs the attention heads ({}) and KV heads ({}) of {} "
                    "to divide by {}; use \"tensor-uneven\", or {} nodes",
                    n, m.heads, m.kv_heads, s.model, n, fmt::join(fits, ", ")));
  }
  if (s.parallelism == Strategy::kExpert && !m.moe) {
    v.fail(fmt::format("expert parallel needs a mixture-of-experts model; {} is dense", s.model));
  }
}

Distribution read_tokens(const JsonValue& v) {
  Distribution d;
  if (v.raw().is_number()) {
    d.value = d.min = d.max = v.as<int>(kOne);
    return d;
  }
  if (!v.raw().is_object()) v.fail("must be a token count or a distribution object, got " + describe_json(v.raw()));
  JsonObject o(v);
  d.kind = choice(o.need("dist"), "distribution", kDistributions);
  if (d.kind == "fixed") {
    d.value = d.min = d.max = o.req<int>("value", kOne);
  } else {
    if (d.kind != "uniform") {
      d.mean = o.req<double>("mean", kPositive);
      d.stddev = o.req<double>("stddev", kNonNegative);
    }
    d.min = o.opt<int>("min", 1, kOne);
    JsonValue max = o.need("max");
    d.max = max.as<int>(kOne);
    if (d.max < d.min) max.fail(fmt::format("max ({}) is below min ({})", d.max, d.min));
  }
  o.finish();
  return d;
}

// A request log replayed: arrivals, prompts and outputs all come from it.
void read_trace(JsonObject& o, const JsonValue& file, Workload& w, const std::string& scenario_file) {
  for (const char* drawn : {"requests", "prompt_tokens", "output_tokens", "arrival"})
    if (auto v = o.find(drawn)) v->fail("a trace workload takes this from its log; remove it");
  const auto log = std::filesystem::path(scenario_file).parent_path() / file.as<std::string>();
  const double time_scale = o.opt<double>("time_scale", 1, kPositive);
  std::optional<std::pair<double, double>> window;
  if (auto v = o.find("window_s")) {
    const auto ends = v->elements();
    if (ends.size() != 2) v->fail("must be [from, to], seconds into the log");
    window = {ends[0].as<double>(kNonNegative), ends[1].as<double>(kNonNegative)};
    if (window->second <= window->first) v->fail("to must come after from");
  }
  w.trace = read_request_trace(log.string(), time_scale, window);
  w.requests = static_cast<int>(w.trace.size());
  w.arrival = "trace";
}

// Requests drawn from distributions, closed loop or Poisson arrivals.
void read_drawn_workload(JsonObject& o, Workload& w) {
  w.requests = o.opt<int>("requests", 1, kOne);
  auto tokens = [&](std::string_view key, int fallback) {
    auto v = o.find(key);
    return v ? read_tokens(*v) : Distribution{"fixed", double(fallback), double(fallback), double(fallback)};
  };
  w.prompt_tokens = tokens("prompt_tokens", 512);
  w.output_tokens = tokens("output_tokens", 128);
  JsonObject arrival = o.section("arrival");
  w.arrival = choice(arrival, "type", "arrival type", kArrivals, "closed");
  if (w.arrival == "closed") {
    w.concurrency = arrival.opt<int>("concurrency", 1, kOne);
  } else {
    w.rate_per_s = arrival.req<double>("rate_per_s", kPositive);
  }
  arrival.finish();
}

void read_workload(JsonObject& root, Scenario& s) {
  JsonObject o = root.section("workload");
  Workload& w = s.workload;
  if (auto trace = o.find("trace")) {
    read_trace(o, *trace, w, s.file);
  } else {
    read_drawn_workload(o, w);
  }
  w.prefill_chunk = o.opt<int>("prefill_chunk", 512, kOne);
  w.max_batch = o.opt<int>("max_batch", 16, kOne);
  JsonObject client = o.section("client");
  w.max_tries = client.opt<int>("max_tries", 3, kOne);
  w.retry_backoff_s = client.opt<double>("retry_backoff_s", 0.1, kNonNegative);
  client.finish();
  o.finish();
}

void read_recovery(JsonObject& root, Scenario& s) {
  JsonObject o = root.section("recovery");
  auto policy = o.find("policy");
  s.recovery = policy ? choice<RecoveryPolicy>(*policy, "recovery policy") : RecoveryPolicy::kFailStop;
  s.heartbeat_s = o.opt<double>("heartbeat_s", 0.05, kPositive);
  auto timeout = o.find("heartbeat_timeout_s");
  s.heartbeat_timeout_s = timeout ? timeout->as<double>(kPositive) : 0.25;
  o.finish();
  if (timeout && s.heartbeat_timeout_s <= s.heartbeat_s) {
    timeout->fail(fmt::format("must exceed heartbeat_s ({} s), or every heartbeat would time out", s.heartbeat_s));
  }
  if (policy && s.recovery == RecoveryPolicy::kFallback && !s.fabric.secondary_link) {
    policy->fail("\"fallback\" needs /cluster/fabric/secondary_link");
  }
}

// "a-b" names the cable(s) between nodes a and b. Node names may hold '-', so
// every split is tried and exactly one must name two nodes.
std::pair<int, int> check_link_target(const JsonValue& v, const Scenario& s) {
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

// rdma-packet-loss: on one cable ("a-b") or, with no target, on every RDMA
// cable; the chance that the device loses a packet, or holds it back and sends
// it after the next one.
void read_packet_loss(JsonObject& o, FaultSpec& f, const Scenario& s) {
  if (auto target = o.find("target")) {
    f.target = target->as<std::string>();
    std::tie(f.node, f.peer) = check_link_target(*target, s);
  }
  for (auto [key, rate] : {std::pair{"loss", &f.loss}, std::pair{"reorder", &f.reorder}}) {
    if (auto v = o.find(key)) {
      *rate = v->as<double>(kNonNegative);
      if (*rate > 1) v->fail(fmt::format("must be a probability, at most 1, got {}", *rate));
    }
  }
  if (f.loss == 0 && f.reorder == 0) o.value().fail("rdma-packet-loss needs loss > 0 or reorder > 0");
}

void read_faults(JsonObject& root, Scenario& s) {
  auto list = root.find("faults");
  if (!list) return;
  for (const JsonValue& v : list->elements()) {
    JsonObject o(v);
    FaultSpec f;
    JsonValue at = o.need("at_s");
    f.at_s = at.as<double>(kNonNegative);
    if (f.at_s >= s.deadline_s) at.fail(fmt::format("the fault would come after the deadline ({} s)", s.deadline_s));
    f.kind = choice<FaultKind>(o.need("kind"), "fault kind");
    // Which keys a kind takes: its target, and the knobs that mean something for it.
    const bool link = on_link(f.kind), node = on_node(f.kind);
    if (link || node) {
      JsonValue target = o.need("target");
      f.target = target.as<std::string>();
      if (link) std::tie(f.node, f.peer) = check_link_target(target, s);
      if (node && (f.node = s.node_index(f.target)) < 0) target.fail(unknown_name("node", f.target, node_names(s)));
    }
    if (f.kind != FaultKind::kLinkUp && f.kind != FaultKind::kNodeRestart && f.kind != FaultKind::kRdmaStackFailure) {
      f.duration_s = o.opt<double>("duration_s", 0.0, kNonNegative);
    }
    if (f.kind == FaultKind::kLinkDegrade || f.kind == FaultKind::kNodeSlow) {
      auto factor = f.kind == FaultKind::kNodeSlow ? std::optional(o.need("factor")) : o.find("factor");
      if (factor) {
        f.factor = factor->as<double>(kPositive);
        if (f.factor > 1)
          factor->fail(fmt::format("must be at most 1 (the fraction of bandwidth or speed kept), got {}", f.factor));
      }
    }
    if (f.kind == FaultKind::kLinkDegrade) {
      f.added_latency_s = o.opt<double>("added_latency_s", 0.0, kNonNegative);
      if (f.factor == 1 && f.added_latency_s == 0)
        o.value().fail("link-degrade needs factor < 1 or added_latency_s > 0");
    }
    if (f.kind == FaultKind::kRdmaPacketLoss) read_packet_loss(o, f, s);
    if (f.kind == FaultKind::kRdmaStackFailure) f.ip_survives = o.opt<bool>("ip_survives", false);
    if (f.kind == FaultKind::kLinkFlap) {
      f.period_s = o.req<double>("period_s", kPositive);
      JsonValue duty = o.need("duty");
      f.duty = duty.as<double>(kPositive);
      if (f.duty >= 1)
        duty.fail(fmt::format("must be below 1 (the fraction of each period the link is down), got {}", f.duty));
    }
    o.finish();
    s.faults.push_back(std::move(f));
  }
}

void read_expectations(JsonObject& root, Scenario& s) {
  auto expect = root.find("expect");
  if (!expect) return;
  JsonObject metrics(*expect);
  for (const auto& [metric, _] : expect->raw().items()) {
    auto v = metrics.find(metric);
    if (metric == "availability")
      v->fail(
          "meant two things and is gone: say \"uptime\" (the fraction of the run the cluster could serve) or "
          "\"request_success\" (completed / total requests)");
    if (std::find(kMetrics.begin(), kMetrics.end(), metric) == kMetrics.end())
      v->fail(unknown_name("metric", metric, kMetrics));
    JsonObject o(*v);
    const auto absent = o.find("may_be_absent");
    const bool may_be_absent = absent && absent->as<bool>();
    std::map<std::string, double> bounds;
    for (std::string_view op : {"min", "max", "eq"}) {
      if (auto bound = o.find(op)) {
        bounds[std::string(op)] = bound->as<double>();
        s.expectations.push_back({metric, std::string(op), bounds[std::string(op)], bound->path(), may_be_absent});
      }
    }
    o.finish();
    if (bounds.empty()) v->fail("needs a bound: \"min\", \"max\" or \"eq\"");
    if (bounds.count("min") && bounds.count("max") && bounds["min"] > bounds["max"]) {
      v->fail(fmt::format("min ({}) is above max ({}): no run can pass", bounds["min"], bounds["max"]));
    }
  }
}

// The cards StackProfile::load can read: catalog/profiles/NAME.json.
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

Scenario parse_scenario(const std::string& text, const std::string& file, const Catalog& catalog) {
  const json doc = parse_json(text, file);
  Scenario s;
  s.file = file;
  JsonObject root(JsonValue(doc, "", s.file));
  root.opt<std::string>("$schema", "");  // lets editors find scenario.schema.json
  s.name = root.opt<std::string>("name", std::filesystem::path(file).stem().string());
  s.description = root.opt<std::string>("description", "");
  s.seed = root.opt<unsigned long long>("seed", 1);

  read_cluster(root, s, catalog);

  read_model(root, s, catalog);
  if (auto v = root.find("parallelism")) {
    s.parallelism = parse_name<Strategy>(choice(*v, "parallelism", kParallelisms));
    check_parallelism(*v, s, catalog);
  }
  if (auto v = root.find("profile")) s.profile = choice(*v, "profile", profile_names(catalog));
  read_workload(root, s);
  s.deadline_s = root.opt<double>("deadline_s", 3600, kPositive);
  if (auto v = root.find("simulation_level")) s.level = choice<SimulationLevel>(*v, "simulation level");
  read_recovery(root, s);
  read_faults(root, s);
  read_expectations(root, s);
  root.finish();
  return s;
}

Scenario load_scenario(const std::string& path, const Catalog& catalog) {
  return parse_scenario(read_text_file(path), path, catalog);
}

Catalog catalog_for(const Scenario& s, const Catalog& catalog) {
  Catalog out = catalog;
  if (s.model_card) out.add(*s.model_card);
  return out;
}

}  // namespace engine