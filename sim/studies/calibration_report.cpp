#include "sim/studies/calibration_report.hpp"

#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "engine/base/json_input.hpp"
#include "engine/cards/stack_profile.hpp"
#include "engine/plan/layer_kernels.hpp"
#include "sim/studies/calibration_fit.hpp"
#include "sim/studies/planning_table.hpp"

namespace sim {

namespace {

using engine::CalibrationRow;

const char* const kStacks[] = {"exo-tensor-rdma", "llamacpp-rpc-tcp", "meshinfer"};
constexpr double kMs = 1e3;

// The report's prose (scenarios/catalog/templates/calibration-report.md): its parts by name, each a format
// string with named fields.
class Prose {
 public:
  explicit Prose(const std::string& file) {
    const std::string text = engine::read_text_file(file);
    const std::string marker = "<!-- part: ";
    std::string* part = nullptr;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t end = std::min(text.find('\n', at), text.size() - 1) + 1;
      const std::string_view line(text.data() + at, end - at);
      if (line.starts_with(marker) && line.find(" -->") != std::string_view::npos)
        part = &parts_[std::string(line.substr(marker.size(), line.find(" -->") - marker.size()))];
      else if (part)
        part->append(line);
      at = end;
    }
  }

  // Part `name` with its fields filled from `args` (fmt::arg("field", value), ...).
  template <typename... Args>
  std::string operator()(const std::string& name, const Args&... args) const {
    const auto at = parts_.find(name);
    if (at == parts_.end()) throw std::runtime_error("the calibration report's template has no part '" + name + "'");
    fmt::dynamic_format_arg_store<fmt::format_context> store;
    (store.push_back(args), ...);
    return fmt::vformat(at->second, store);
  }

 private:
  std::map<std::string, std::string> parts_;
};

struct Context {
  const engine::Measurements& m;
  const engine::Catalog& catalog;
  std::map<std::string, engine::StackProfile> profiles;
  Prose prose;

  RowRun run(const CalibrationRow& row, const std::string& link = "", const engine::Catalog* what_if = nullptr) const {
    return run_row(row, m.cluster, what_if ? *what_if : catalog, profiles.at(row.stack), link);
  }
};

CalibrationRow prediction(const std::string& model, const std::string& quant, const std::string& stack, int nodes) {
  CalibrationRow r;
  r.model = model;
  r.quant = quant;
  r.system = r.stack = stack;
  r.nodes = nodes;
  return r;
}

// A planner refusal lists one reason per line: a table cell needs one line.
std::string one_line(std::string text) {
  for (std::size_t at; (at = text.find("\n  ")) != std::string::npos;)
    text.replace(at, 3, text[at - 1] == ':' ? " " : "; ");
  return text;
}

// Kernels one decode token launches on a node holding the whole model.
int kernels_per_token(const engine::ModelCard& m) {
  engine::Shard whole;
  whole.heads = m.heads;
  whole.kv_heads = m.kv_heads;
  whole.experts = m.moe ? m.moe->experts : 0;
  engine::StepShape one;
  one.tokens = one.sequences = one.logits = 1;
  std::size_t n = engine::lm_head_kernels(m, one, 1).size();
  for (int layer = 0; layer < m.layers; ++layer)
    n += engine::attention_kernels(m, whole, one).size() + engine::ffn_kernels(m, layer, whole, one).size();
  return static_cast<int>(n);
}

std::string pct(double x) { return fmt::format("{:+.1f}%", 100 * x); }

std::string breakdown_section(const Prose& prose, const std::vector<std::string>& tables) {
  std::string out = prose("breakdown");
  for (const auto& t : tables) out += t;
  return out;
}

std::string breakdown_table(const std::string& title, const RowRun& run) {
  std::string out = fmt::format("\n**{}** ({} plan, {:.2f} tok/s)\n\n", title, run.strategy, run.tokens_per_s);
  out +=
      "| node | hardware | token (ms) | compute (ms) | communication (ms) | waiting (ms) "
      "|\n|---|---|---:|---:|---:|---:|\n";
  for (const auto& n : run.nodes)
    out += fmt::format("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", n.node, n.hardware, kMs * n.token_s,
                       kMs * n.compute_s, kMs * n.comm_s, kMs * n.wait_s);
  return out;
}

// Published vs simulated, one table per stack: in-sample (the committed profile,
// fitted to every row) beside held out (fitted without the row's model), and sources.
std::string fitted_section(const Context& c, const CrossValidation& cv) {
  std::vector<std::string> breakdowns, sources;
  std::string out = c.prose("fitted");
  for (const char* stack : kStacks) {
    if (!cv.count(stack)) continue;
    out += fmt::format(
        "\n### {}\n\n| row | published (tok/s) | in-sample (tok/s) | error | held out (tok/s) | error | source "
        "|\n|---|---:|---:|---:|---:|---:|---|\n",
        stack);
    for (const auto& r : cv.at(stack)) {
      auto at = std::find(sources.begin(), sources.end(), r.row.source);
      if (at == sources.end()) at = sources.insert(at, r.row.source);
      out += fmt::format("| {} | {:.2f} | {:.2f} | {} | {:.2f} | {} | [{}] |\n", r.row.label(), r.row.published,
                         r.in_sample, pct(r.in_sample_error()), r.held_out, pct(r.held_out_error()),
                         at - sources.begin() + 1);
      if (r.row.nodes > 1 && !r.row.prefill) breakdowns.push_back(breakdown_table(r.row.label(), c.run(r.row)));
    }
    const auto in = in_sample_summary(cv.at(stack)), held = held_out_summary(cv.at(stack));
    out += c.prose("stack summary", fmt::arg("stack", stack), fmt::arg("rows", cv.at(stack).size()),
                   fmt::arg("in_sample_mean", 100 * in.mean_abs), fmt::arg("held_out_mean", 100 * held.mean_abs),
                   fmt::arg("held_out_worst", 100 * held.worst), fmt::arg("worst_row", held.worst_row));
    std::vector<std::string> groups;
    for (const auto& r : cv.at(stack)) {
      if (r.row.shape_only.empty() || std::find(groups.begin(), groups.end(), r.row.shape_only) != groups.end())
        continue;
      groups.push_back(r.row.shape_only);
      const auto rows = std::count_if(cv.at(stack).begin(), cv.at(stack).end(),
                                      [&](const auto& q) { return q.row.shape_only == r.row.shape_only; });
      out += c.prose("shape group", fmt::arg("group", r.row.shape_only), fmt::arg("rows", rows),
                     fmt::arg("in_sample", r.in_sample_factor), fmt::arg("held_out", r.held_out_factor),
                     fmt::arg("in_sample_pct", 100 * (r.in_sample_factor - 1)));
    }
  }
  out += "\nSources:\n\n";
  for (std::size_t i = 0; i < sources.size(); ++i) out += fmt::format("{}. {}\n", i + 1, sources[i]);
  return out + breakdown_section(c.prose, breakdowns);
}

// What the fitted values say, with the numbers in them.
std::string reading_notes(const Context& c, const std::map<std::string, std::vector<engine::FitParameter>>& bounds) {
  const auto& exo = c.profiles.at("exo-tensor-rdma");
  const auto& cpp = c.profiles.at("llamacpp-rpc-tcp");
  std::string out = c.prose("reading");
  std::set<std::string> seen;  // a shared parameter is listed under every stack that takes it
  for (const auto& [stack, list] : bounds)
    for (const auto& b : list) {
      const double v = c.profiles.at(stack).get(b.key), span = b.upper - b.lower;
      if (!seen.insert(b.profile + "/" + b.key).second) continue;
      if (v - b.lower < 1e-3 * span || b.upper - v < 1e-3 * span)
        out += c.prose("at bound", fmt::arg("profile", b.profile), fmt::arg("key", b.key), fmt::arg("value", v));
    }
  // What llama.cpp's last stage returns to the client a token: Qwen3's logits, 4 bytes each.
  const double logits_bytes = 4.0 * c.catalog.model("qwen3-235b-a22b").vocab;
  const auto& tcp = c.catalog.link(engine::stack_setup("llamacpp-rpc-tcp").link);
  const double logits_s = engine::timed_bytes(tcp, logits_bytes) / tcp.bandwidth;
  out += c.prose("reading notes", fmt::arg("bandwidth_pct", 100 * exo.memory_bandwidth_efficiency),
                 fmt::arg("compute_pct", 100 * exo.compute_efficiency),
                 fmt::arg("expert_compute_pct", 100 * exo.expert_compute_efficiency),
                 fmt::arg("mlx_kernel_us", 1e6 * exo.per_kernel_overhead_s),
                 fmt::arg("cpp_kernel_us", 1e6 * cpp.per_kernel_overhead_s),
                 fmt::arg("cpp_expert_us", 1e6 * cpp.per_expert_overhead_s),
                 fmt::arg("qwen3_kernels", kernels_per_token(c.catalog.model("qwen3-235b-a22b"))),
                 fmt::arg("kimi_kernels", kernels_per_token(c.catalog.model("kimi-k2.6"))),
                 fmt::arg("deepseek_kernels", kernels_per_token(c.catalog.model("deepseek-v3.1"))),
                 fmt::arg("llama70b_kernels", kernels_per_token(c.catalog.model("llama-3.3-70b"))),
                 fmt::arg("rpc_message_ms", 1e3 * cpp.per_message_overhead_s),
                 fmt::arg("logits_kb", logits_bytes / 1e3), fmt::arg("logits_ms", 1e3 * logits_s));
  return out;
}

std::string parameters_section(const Context& c) {
  std::string out = c.prose("parameters") + "| parameter |";
  for (const char* stack : kStacks) out += fmt::format(" {} |", stack);
  out += "\n|---|";
  for (std::size_t i = 0; i < std::size(kStacks); ++i) out += "---:|";
  out += "\n";
  std::map<std::string, std::vector<engine::FitParameter>> bounds;
  for (const auto& p : engine::stack_fit_parameters(c.catalog.dir(), {std::begin(kStacks), std::end(kStacks)}))
    for (const auto& stack : p.stacks) bounds[stack].push_back(p);
  for (const std::string& key : engine::StackProfile::numeric_keys()) {
    out += "| " + key + " |";
    for (const char* stack : kStacks) {
      std::string cell = fmt::format("{:.4g}", c.profiles.at(stack).get(key));
      for (const auto& b : bounds[stack])
        if (b.key == key)
          cell += fmt::format(" (fit in {}..{}{})", b.lower, b.upper, b.profile == stack ? "" : ", " + b.profile);
      out += " " + cell + " |";
    }
    out += "\n";
  }
  return out + reading_notes(c, bounds);
}

std::string prediction_rows(const Context& c, const std::vector<CalibrationRow>& rows,
                            std::vector<std::string>& breakdowns) {
  std::string out = "| model | quant | stack | nodes | plan | decode (tok/s) |\n|---|---|---|---:|---|---:|\n";
  for (const auto& r : rows) {
    const RowRun run = c.run(r);
    if (!run.refusal.empty()) {
      out += fmt::format("| {} | {} | {} | {} | — | does not fit: {} |\n", r.model, r.quant, r.stack, r.nodes,
                         one_line(run.refusal));
      continue;
    }
    out += fmt::format("| {} | {} | {} | {} | {} | {:.2f} |\n", r.model, r.quant, r.stack, r.nodes, run.strategy,
                       run.tokens_per_s);
    if (r.nodes > 1) breakdowns.push_back(breakdown_table(r.label(), run));
  }
  return out;
}

std::vector<CalibrationRow> predicted_rows() {
  std::vector<CalibrationRow> rows;
  for (const char* stack : kStacks) {
    const bool llamacpp = std::string(stack) == "llamacpp-rpc-tcp";
    // DeepSeek-V3.1: 8-bit where it fits; on one node 4-bit (llama.cpp's 4-bit is Q4_K_M).
    rows.push_back(prediction("deepseek-v3.1", llamacpp ? "q4_k_m" : "4bit", stack, 1));
    for (int n : {1, 2, 4}) rows.push_back(prediction("deepseek-v3.1", "8bit", stack, n));
    for (int n : {1, 2, 4}) rows.push_back(prediction("kimi-k2-thinking", "int4", stack, n));
  }
  return rows;
}

std::string predictions_section(const Context& c) {
  std::vector<std::string> breakdowns;
  std::string out = c.prose("predictions");
  out += prediction_rows(c, predicted_rows(), breakdowns);
  out += c.prose("predictions llama");
  std::vector<CalibrationRow> llama;
  for (int n : {1, 4}) llama.push_back(prediction("llama-3.3-70b", "8bit", "exo-tensor-rdma", n));
  out += prediction_rows(c, llama, breakdowns);
  return out + breakdown_section(c.prose, breakdowns);
}

std::string planning_section(const Context& c, const CrossValidation& cv, int jobs) {
  const std::vector<std::string> stacks(std::begin(kStacks), std::end(kStacks));
  std::map<std::string, PlanningUncertainty> uncertainty;
  for (const auto& stack : stacks)
    uncertainty.emplace(stack, planning_uncertainty(stack, c.profiles.at(stack).based_on, cv));
  const auto rows = planning_rows(c.catalog, stacks);
  return c.prose("planning", fmt::arg("prompt_tokens", kPlanningPromptTokens)) +
         planning_table(rows, run_rows(rows, c.m.cluster, c.catalog, c.profiles, jobs), uncertainty) +
         c.prose("planning uncertainty") + uncertainty_table(uncertainty);
}

// Batch-1 decode after ever longer prompts: every token's attention reads the whole KV cache.
std::string context_section(const Context& c) {
  const int contexts[] = {1024, 8192, 32768, 131072};
  std::string out = c.prose("context") + "| model | quant | stack |";
  for (int n : contexts) out += fmt::format(" {} |", n);
  out += "\n|---|---|---|---:|---:|---:|---:|\n";
  const std::tuple<const char*, const char*, const char*> rows[] = {
      {"qwen3-235b-a22b", "8bit", "exo-tensor-rdma"},
      {"kimi-k2.6", "mlx-mixed-3.578bpw", "exo-tensor-rdma"},
      {"llama-3.3-70b", "q4_k_m", "llamacpp-rpc-tcp"}};
  for (const auto& [model, quant, stack] : rows) {
    out += fmt::format("| {} | {} | {} |", model, quant, stack);
    for (int n : contexts) {
      CalibrationRow r = prediction(model, quant, stack, 1);
      r.prompt_tokens = n;
      try {
        const RowRun run = c.run(r);
        out += run.refusal.empty() ? fmt::format(" {:.2f} |", run.tokens_per_s) : std::string(" does not fit |");
      } catch (const std::runtime_error&) {  // the request refused: its KV cache does not fit
        out += " refused |";
      }
    }
    out += "\n";
  }
  return out;
}

// 4-node decode with a profile or link changed, against the row as calibrated.
struct Ablation {
  std::string what;
  double one, four;  // tok/s
};

engine::LinkCard scaled_link(const engine::LinkCard& card, const std::string& name, double latency, double bandwidth) {
  engine::LinkCard l = card;
  l.name = name;
  l.latency_s *= latency;
  l.bandwidth *= bandwidth;
  // A card that times messages by size (wire_time_by_size) takes its wire times from the table, not the
  // bandwidth: they scale with it.
  for (engine::WireTime& p : l.wire_time_by_size) p.seconds /= bandwidth;
  return l;
}

std::string why_section(const Context& c) {
  const CalibrationRow one = prediction("qwen3-235b-a22b", "8bit", "exo-tensor-rdma", 1);
  CalibrationRow four = one;
  four.nodes = 4;
  const RowRun r1 = c.run(one), r4 = c.run(four);
  const auto& p = c.profiles.at("exo-tensor-rdma");
  const auto& model = c.catalog.model(one.model);
  // Fixed per-step costs no node count divides: a dispatch per kernel.
  const int kernels = kernels_per_token(model);
  const double fixed = kernels * p.per_kernel_overhead_s;
  Context ideal = c;
  engine::StackProfile& q = ideal.profiles.at("exo-tensor-rdma");
  for (const char* key : {"per_kernel_overhead_us", "per_expert_overhead_us"}) q.set(key, 0);
  engine::Catalog instant = c.catalog;
  engine::LinkCard link = scaled_link(c.catalog.link("tb5-rdma"), "instant", 0, 1e6);
  link.per_message_overhead_s = 0;
  instant.add(link);
  const double no_overhead = ideal.run(four).tokens_per_s, no_overhead_1 = ideal.run(one).tokens_per_s;
  const double no_comm = c.run(four, "instant", &instant).tokens_per_s;
  const double neither = ideal.run(four, "instant", &instant).tokens_per_s;
  const auto& n4 = r4.nodes.at(0);
  std::string out = c.prose(
      "why", fmt::arg("one_tok_s", r1.tokens_per_s), fmt::arg("one_ms", kMs / r1.tokens_per_s),
      fmt::arg("four_tok_s", r4.tokens_per_s), fmt::arg("four_ms", kMs / r4.tokens_per_s),
      fmt::arg("speedup", r4.tokens_per_s / r1.tokens_per_s), fmt::arg("compute_ms", kMs * n4.compute_s),
      fmt::arg("comm_ms", kMs * n4.comm_s), fmt::arg("wait_ms", kMs * n4.wait_s), fmt::arg("dispatch_ms", kMs * fixed),
      fmt::arg("kernels", kernels), fmt::arg("kernel_us", 1e6 * p.per_kernel_overhead_s),
      fmt::arg("all_reduces", 2 * model.layers));
  out +=
      "| case | 1 node (tok/s) | 4 nodes (tok/s) | speed-up |\n"
      "|---|---:|---:|---:|\n";
  const std::vector<Ablation> rows = {
      {"as calibrated", r1.tokens_per_s, r4.tokens_per_s},
      {"no per-kernel/per-expert overhead", no_overhead_1, no_overhead},
      {"instant network (no latency, no per-message cost, 1e6x bandwidth)", r1.tokens_per_s, no_comm},
      {"both removed", no_overhead_1, neither}};
  for (const auto& a : rows)
    out += fmt::format("| {} | {:.2f} | {:.2f} | {:.2f}x |\n", a.what, a.one, a.four, a.four / a.one);
  out += c.prose("why conclusion", fmt::arg("speedup", r4.tokens_per_s / r1.tokens_per_s),
                 fmt::arg("no_overhead_speedup", no_overhead / no_overhead_1),
                 fmt::arg("no_comm_speedup", no_comm / r1.tokens_per_s),
                 fmt::arg("neither_speedup", neither / no_overhead_1));
  return out;
}

std::string sensitivity_section(const Context& c) {
  std::string out =
      c.prose("sensitivity") +
      "| stack | link | as calibrated | latency x0.5 | latency x2 | bandwidth x0.5 | bandwidth x2 |\n"
      "|---|---|---:|---:|---:|---:|---:|\n";
  std::string notes;
  for (const char* stack : {"exo-tensor-rdma", "llamacpp-rpc-tcp"}) {
    CalibrationRow row;
    for (const auto& r : c.m.rows)
      if (r.stack == stack && r.nodes == 4 && !r.prefill) row = r;
    const std::string base = engine::stack_setup(stack).link;
    engine::Catalog what_if = c.catalog;
    const double calibrated = c.run(row).tokens_per_s;
    const auto& link = c.catalog.link(base);
    const double per_message = link.per_message_overhead_s + c.profiles.at(stack).per_message_overhead_s;
    const double activation_bytes = 2.0 * c.catalog.model(row.model).hidden;  // one token, 16-bit
    const double wire_s = engine::timed_bytes(link, activation_bytes) / link.bandwidth;
    const std::string wire_how = link.wire_time_by_size.empty()
                                     ? fmt::format("at {:.1f} GB/s", link.bandwidth / 1e9)
                                     : std::string("as the card's wire_time_by_size times it");
    out += fmt::format("| {} | {} | {:.2f} |", stack, base, calibrated);
    for (auto [lat, bw] : {std::pair{0.5, 1.0}, {2.0, 1.0}, {1.0, 0.5}, {1.0, 2.0}}) {
      const std::string name = fmt::format("{}-lat{}-bw{}", base, lat, bw);
      what_if.add(scaled_link(link, name, lat, bw));
      const double v = c.run(row, name, &what_if).tokens_per_s;
      out += fmt::format(" {:.2f} ({}) |", v, pct(engine::relative_error(v, calibrated)));
    }
    out += "\n";
    notes += c.prose("sensitivity note", fmt::arg("stack", stack), fmt::arg("software_us", 1e6 * per_message),
                     fmt::arg("latency_us", 1e6 * link.latency_s), fmt::arg("wire_us", 1e6 * wire_s),
                     fmt::arg("bytes", activation_bytes), fmt::arg("wire_how", wire_how));
  }
  return out + c.prose("sensitivity why") + notes;
}

std::string header(const Context& c, const std::string& measurements_file) {
  return c.prose("header", fmt::arg("measurements", measurements_file),
                 fmt::arg("prompt_tokens", engine::kDecodePromptTokens),
                 fmt::arg("output_tokens", engine::kDecodeOutputTokens));
}

}  // namespace

void write_calibration_report(const engine::Measurements& m, const std::string& measurements_file,
                              const engine::Catalog& catalog, const CrossValidation& cv, int jobs,
                              const std::string& out) {
  Context c{m, catalog, {}, Prose(catalog.dir() + "/templates/calibration-report.md")};
  for (const char* stack : kStacks) c.profiles.emplace(stack, engine::StackProfile::load(catalog.dir(), stack));
  const std::string text = header(c, measurements_file) + fitted_section(c, cv) + parameters_section(c) +
                           predictions_section(c) + planning_section(c, cv, jobs) + context_section(c) +
                           why_section(c) + sensitivity_section(c);
  std::ofstream o(out);
  if (!(o << text)) throw std::runtime_error("cannot write " + out);
}

}  // namespace sim
