#include "engine/input/measurements.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"

namespace engine {

namespace {

using nlohmann::json;

CalibrationRow parse_row(const JsonValue& v, bool prefill) {
  JsonObject o(v);
  // What the fit reads, and what documents a measurement.
  o.only({"model", "quant", "system", "nodes", "tokens_per_s", "prompt_tokens", "seconds", "bench", "power_w",
          "weights_gib", "note", "source", "hardware", "shape_only"});
  CalibrationRow r;
  r.model = o.req<std::string>("model");
  r.quant = o.req<std::string>("quant");
  if (r.quant.ends_with('?')) {
    r.quant.pop_back();
    r.quant_uncertain = true;
  }
  const JsonValue system = o.need("system");
  r.system = system.as<std::string>();
  try {
    r.stack = stack_of(r.system);
  } catch (const InputError& e) {
    system.fail(e.reason());
  }
  r.nodes = o.req<int>("nodes", kOne);
  r.prefill = prefill;
  r.prompt_tokens =
      prefill ? o.req<int>("prompt_tokens", kOne) : o.opt<int>("prompt_tokens", kDecodePromptTokens, kOne);
  r.source = o.req<std::string>("source");
  r.hardware = o.opt<std::string>("hardware", "");
  r.shape_only = o.opt<std::string>("shape_only", "");
  // A prefill published as a duration is converted to tokens/s.
  const auto seconds = prefill ? o.find("seconds") : std::nullopt;
  r.published = seconds ? r.prompt_tokens / seconds->as<double>(kPositive) : o.req<double>("tokens_per_s", kPositive);
  return r;
}

}  // namespace

std::string CalibrationRow::label() const {
  const std::string what = prefill                                ? fmt::format("prefill {}", prompt_tokens)
                           : prompt_tokens == kDecodePromptTokens ? std::string("decode")
                                                                  : fmt::format("decode after {}", prompt_tokens);
  return fmt::format("{} {}{} {} x{}{} ({})", model, quant, quant_uncertain ? "?" : "", what, nodes,
                     hardware.empty() ? "" : " " + hardware, system);
}

std::string stack_of(const std::string& system) {
  if (system == "exo-tensor-rdma" || system == "exo-mlx" || system == "mlx-lm-local") return "exo-tensor-rdma";
  if (system == "llamacpp-rpc-tcp" || system == "llamacpp-local") return "llamacpp-rpc-tcp";
  throw InputError("", "",
                   unknown_name("system", system,
                                {"exo-tensor-rdma", "exo-mlx", "mlx-lm-local", "llamacpp-rpc-tcp", "llamacpp-local"}));
}

StackSetup stack_setup(const std::string& stack) {
  if (stack == "llamacpp-rpc-tcp") return {"tb5-tcp", Strategy::kPipeline};
  if (stack == "exo-tensor-rdma") return {"tb5-rdma", Strategy::kTensor};
  return {"tb5-rdma", std::nullopt};  // meshinfer: its own best plan on RDMA
}

Measurements load_measurements(const std::string& file) {
  const json j = load_json(file);
  JsonObject root(JsonValue(j, "", file));
  root.only({"about", "cluster", "decode", "prefill", "hpl_fp64_gflops"});
  Measurements m;
  JsonObject cluster(root.need("cluster"));
  cluster.only({"nodes", "note"});
  const JsonValue nodes = cluster.need("nodes");
  for (const JsonValue& n : nodes.elements()) m.cluster.push_back(n.as<std::string>());
  for (const auto& [key, prefill] : {std::pair{"decode", false}, std::pair{"prefill", true}})
    for (const JsonValue& row : root.need(key).elements()) m.rows.push_back(parse_row(row, prefill));
  for (const auto& r : m.rows)
    if (r.hardware.empty() && r.nodes > static_cast<int>(m.cluster.size()))
      nodes.fail(fmt::format("{} needs {} nodes", r.label(), r.nodes));
  return m;
}

nlohmann::json measurement_json(const CalibrationRow& r) {
  json j = {{"model", r.model},
            {"quant", r.quant + (r.quant_uncertain ? "?" : "")},
            {"system", r.system},
            {"nodes", r.nodes},
            {"tokens_per_s", r.published},
            {"source", r.source}};
  if (r.prefill || r.prompt_tokens != kDecodePromptTokens) j["prompt_tokens"] = r.prompt_tokens;
  if (!r.hardware.empty()) j["hardware"] = r.hardware;
  if (!r.shape_only.empty()) j["shape_only"] = r.shape_only;
  return j;
}

Scenario row_scenario(const CalibrationRow& row, const std::vector<std::string>& cluster, const std::string& link) {
  const StackSetup setup = stack_setup(row.stack);
  Scenario s;
  s.name = row.label();
  s.model = row.model;
  s.quant = row.quant;
  s.parallelism = setup.parallelism;
  s.profile = row.stack;
  for (int i = 0; i < row.nodes; ++i)
    s.nodes.push_back({fmt::format("m{}", i + 1), row.hardware.empty() ? cluster.at(i) : row.hardware});
  s.fabric.link = link.empty() ? setup.link : link;
  for (int a = 0; a < row.nodes; ++a)
    for (int b = a + 1; b < row.nodes; ++b) s.fabric.cables.push_back({a, b, 0, 0, s.fabric.link});
  Workload& w = s.workload;
  w.requests = 1;
  const int prompt = row.prompt_tokens;
  const int output = row.prefill ? 1 : kDecodeOutputTokens;
  w.prompt_tokens = Distribution{"fixed", double(prompt), double(prompt), double(prompt)};
  w.output_tokens = Distribution{"fixed", double(output), double(output), double(output)};
  return s;
}

namespace {

// In the file's key order, so write_profile keeps it.
nlohmann::ordered_json read_profile(const std::string& file) {
  const std::string text = read_text_file(file);
  parse_json(text, file);  // refuses malformed JSON as every reader does
  return nlohmann::ordered_json::parse(text);
}

}  // namespace

std::vector<FitParameter> fit_parameters(const std::string& file) {
  const json j = load_json(file);
  JsonObject card(JsonValue(j, "", file));
  std::vector<FitParameter> out;
  for (const std::string& key : StackProfile::numeric_keys()) {
    auto p = card.find(key);
    auto fit = p ? JsonObject(*p).find("fit") : std::nullopt;
    if (!fit) continue;
    const auto bounds = fit->elements();
    if (bounds.size() != 2) fit->fail(fmt::format("must be [lower, upper], got {}", describe_json(fit->raw())));
    const double lower = bounds[0].as<double>(), upper = bounds[1].as<double>();
    if (!(lower < upper))
      fit->fail(fmt::format("must be [lower, upper] with lower < upper, got [{}, {}]", lower, upper));
    out.push_back({key, lower, upper, {}, {}});
  }
  return out;
}

std::vector<FitParameter> stack_fit_parameters(const std::string& catalog_dir, const std::vector<std::string>& stacks) {
  std::vector<FitParameter> out;
  for (const std::string& stack : stacks) {
    std::set<std::string> hidden;  // keys a profile nearer the stack sets
    for (std::string name = stack; !name.empty(); name = StackProfile::load(catalog_dir, name).based_on) {
      const std::string file = catalog_dir + "/profiles/" + name + ".json";
      for (FitParameter p : fit_parameters(file)) {
        if (hidden.count(p.key)) continue;
        auto same =
            std::find_if(out.begin(), out.end(), [&](const auto& q) { return q.profile == name && q.key == p.key; });
        if (same != out.end()) {
          same->stacks.push_back(stack);
          continue;
        }
        p.profile = name;
        p.stacks = {stack};
        out.push_back(std::move(p));
      }
      const json j = load_json(file);
      for (const std::string& key : StackProfile::numeric_keys())
        if (j.contains(key)) hidden.insert(key);
    }
  }
  return out;
}

void write_profile(const std::string& file, const std::string& out, const StackProfile& p) {
  auto j = read_profile(file);
  for (const std::string& key : StackProfile::numeric_keys())
    if (j.contains(key)) j[key]["value"] = std::round(p.get(key) * 1e4) / 1e4;  // 4 decimals: the fit is no finer
  std::string text = "{\n";
  std::size_t i = 0;
  for (const auto& [key, value] : j.items())
    text += fmt::format("  {}: {}{}\n", nlohmann::json(key).dump(), value.dump(), ++i < j.size() ? "," : "");
  text += "}\n";
  std::ofstream o(out);
  if (!(o << text)) throw InputError(out, "", "cannot write the file");
}

double relative_error(double simulated, double published) { return (simulated - published) / published; }

std::vector<double> shape_factors(const std::vector<double>& simulated, const std::vector<CalibrationRow>& rows) {
  std::map<std::string, std::pair<double, int>> log_sum;  // per group: sum of log(simulated / published), rows
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].shape_only.empty()) {
      auto& [sum, n] = log_sum[rows[i].shape_only];
      sum += std::log(simulated[i] / rows[i].published);
      ++n;
    }
  std::vector<double> out;
  for (const auto& r : rows)
    out.push_back(r.shape_only.empty() ? 1.0 : std::exp(log_sum[r.shape_only].first / log_sum[r.shape_only].second));
  return out;
}

std::vector<double> row_errors(const std::vector<double>& simulated, const std::vector<CalibrationRow>& rows) {
  const std::vector<double> factors = shape_factors(simulated, rows);
  std::vector<double> out;
  for (std::size_t i = 0; i < rows.size(); ++i) out.push_back(relative_error(simulated[i] / factors[i], rows[i].published));
  return out;
}

double squared_error(const std::vector<double>& simulated, const std::vector<CalibrationRow>& rows) {
  double sum = 0;
  for (const double e : row_errors(simulated, rows)) sum += e * e;
  return sum;
}

}  // namespace engine
