#include "engine/measurements.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/error.hpp"

namespace engine {

namespace {

using nlohmann::json;

// A field of a row, named by its JSON path when it is missing or mistyped.
template <typename T>
T field(const json& row, const std::string& file, const std::string& path, const char* key) {
  if (!row.contains(key)) throw InputError(file, path + "/" + key, "missing field");
  try {
    return row.at(key).get<T>();
  } catch (const json::exception&) {
    throw InputError(file, path + "/" + key, "wrong type");
  }
}

CalibrationRow parse_row(const json& j, const std::string& file, const std::string& path, bool prefill) {
  CalibrationRow r;
  r.model = field<std::string>(j, file, path, "model");
  r.quant = field<std::string>(j, file, path, "quant");
  if (r.quant.ends_with('?')) {
    r.quant.pop_back();
    r.quant_uncertain = true;
  }
  r.system = field<std::string>(j, file, path, "system");
  try {
    r.stack = stack_of(r.system);
  } catch (const InputError& e) {
    throw InputError(file, path + "/system", e.reason());
  }
  r.nodes = field<int>(j, file, path, "nodes");
  r.prefill = prefill;
  if (prefill) r.prompt_tokens = field<int>(j, file, path, "prompt_tokens");
  // A prefill published as a duration is converted to tokens/s.
  r.published = prefill && j.contains("seconds") ? r.prompt_tokens / field<double>(j, file, path, "seconds")
                                                 : field<double>(j, file, path, "tokens_per_s");
  if (r.nodes < 1 || r.published <= 0 || (prefill && r.prompt_tokens < 1))
    throw InputError(file, path, "nodes, prompt_tokens and the measurement must be positive");
  return r;
}

}  // namespace

std::string CalibrationRow::label() const {
  return fmt::format("{} {}{} {} x{} ({})", model, quant, quant_uncertain ? "?" : "",
                     prefill ? fmt::format("prefill {}", prompt_tokens) : std::string("decode"), nodes, system);
}

std::string stack_of(const std::string& system) {
  if (system == "exo-tensor-rdma" || system == "exo-mlx") return "exo-tensor-rdma";
  if (system == "llamacpp-rpc-tcp" || system == "llamacpp-local") return "llamacpp-rpc-tcp";
  throw InputError(
      "", "", "unknown system \"" + system + "\"; known: exo-tensor-rdma, exo-mlx, llamacpp-rpc-tcp, llamacpp-local");
}

StackSetup stack_setup(const std::string& stack) {
  if (stack == "llamacpp-rpc-tcp") return {"tb5-tcp", Strategy::kPipeline};
  if (stack == "exo-tensor-rdma") return {"tb5-rdma", Strategy::kTensor};
  return {"tb5-rdma", std::nullopt};  // meshinfer: its own best plan on RDMA
}

Measurements load_measurements(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file, "", "cannot open the file");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError(file, "", e.what());
  }
  Measurements m;
  try {
    m.cluster = j.at("cluster").at("nodes").get<std::vector<std::string>>();
  } catch (const json::exception&) {
    throw InputError(file, "/cluster/nodes", "expected an array of hardware card names");
  }
  for (const auto& [key, prefill] : {std::pair{"decode", false}, std::pair{"prefill", true}}) {
    if (!j.contains(key) || !j[key].is_array()) throw InputError(file, std::string("/") + key, "expected an array");
    for (std::size_t i = 0; i < j[key].size(); ++i)
      m.rows.push_back(parse_row(j[key][i], file, fmt::format("/{}/{}", key, i), prefill));
  }
  for (const auto& r : m.rows)
    if (r.nodes > static_cast<int>(m.cluster.size()))
      throw InputError(file, "/cluster/nodes", fmt::format("{} needs {} nodes", r.label(), r.nodes));
  return m;
}

Scenario row_scenario(const CalibrationRow& row, const std::vector<std::string>& cluster, const std::string& link) {
  const StackSetup setup = stack_setup(row.stack);
  Scenario s;
  s.name = row.label();
  s.model = row.model;
  s.quant = row.quant;
  s.parallelism = setup.parallelism;
  s.profile = row.stack;
  for (int i = 0; i < row.nodes; ++i) s.nodes.push_back({fmt::format("m{}", i + 1), cluster.at(i)});
  s.fabric.link = link.empty() ? setup.link : link;
  for (int a = 0; a < row.nodes; ++a)
    for (int b = a + 1; b < row.nodes; ++b) s.fabric.cables.push_back({a, b, 0, 0, s.fabric.link});
  Workload& w = s.workload;
  w.requests = 1;
  const int prompt = row.prefill ? row.prompt_tokens : kDecodePromptTokens;
  const int output = row.prefill ? 1 : kDecodeOutputTokens;
  w.prompt_tokens = Distribution{"fixed", double(prompt), double(prompt), double(prompt)};
  w.output_tokens = Distribution{"fixed", double(output), double(output), double(output)};
  return s;
}

namespace {

nlohmann::ordered_json read_profile(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file, "", "cannot open the file");
  try {
    return nlohmann::ordered_json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError(file, "", e.what());
  }
}

}  // namespace

std::vector<FitParameter> fit_parameters(const std::string& file) {
  const auto j = read_profile(file);
  std::vector<FitParameter> out;
  for (const std::string& key : StackCard::numeric_keys()) {
    if (!j.contains(key) || !j[key].contains("fit")) continue;
    const auto& b = j[key]["fit"];
    if (!b.is_array() || b.size() != 2 || !b[0].is_number() || !b[1].is_number() || !(b[0] < b[1]))
      throw InputError(file, "/" + key + "/fit", "expected [lower, upper] with lower < upper");
    out.push_back({key, b[0].get<double>(), b[1].get<double>()});
  }
  return out;
}

void write_profile(const std::string& file, const std::string& out, const StackCard& p) {
  auto j = read_profile(file);
  for (const std::string& key : StackCard::numeric_keys())
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

double squared_error(const std::vector<double>& simulated, const std::vector<CalibrationRow>& rows) {
  double sum = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double e = relative_error(simulated[i], rows[i].published);
    sum += e * e;
  }
  return sum;
}

}  // namespace engine
