#include "sim/studies/calibration_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "engine/cards/stack_card.hpp"
#include "engine/plan/layer_kernels.hpp"
#include "sim/studies/calibration_fit.hpp"
#include "sim/studies/planning_table.hpp"

namespace sim {

namespace {

using engine::CalibrationRow;

const char* const kStacks[] = {"exo-tensor-rdma", "llamacpp-rpc-tcp", "meshinfer"};
constexpr double kMs = 1e3;

struct Context {
  const engine::Measurements& m;
  const engine::Catalog& catalog;
  std::map<std::string, engine::StackCard> profiles;

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

std::string breakdown_section(const std::vector<std::string>& tables) {
  std::string out =
      "\n### One decode token, per node (multi-node rows)\n\nCompute: the node's own ops. Communication: inside "
      "send/recv "
      "while a message was under way (per-message software cost, latency, transfer), including rank 0 sending each "
      "step's plan. Waiting: blocked on a peer that had not sent yet, or idle between steps.\n";
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
  std::string out =
      "## Published vs simulated: in-sample and leave one model out\n\nIn-sample: the committed profile (the last "
      "fit of `scripts/calibration-report` to every row, all stacks at once); it says how well the model can fit, not "
      "how well it "
      "predicts. Held out: the profiles fitted "
      "again to the other models' rows only (from the middle of every parameter's bounds), then run on this model's "
      "rows, one model at a time (`meshinfer calibrate scenarios/calibration/published.json --no-fit "
      "--cross-validate`). The held-out error is what to expect on a model the calibration has not seen.\n";
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
    out += fmt::format(
        "\n**{}, {} rows: mean absolute error {:.1f}% in-sample, {:.1f}% held out; worst held out {:.1f}% ({}).**\n",
        stack, cv.at(stack).size(), 100 * in.mean_abs, 100 * held.mean_abs, 100 * held.worst, held.worst_row);
  }
  out += "\nSources:\n\n";
  for (std::size_t i = 0; i < sources.size(); ++i) out += fmt::format("{}. {}\n", i + 1, sources[i]);
  return out + breakdown_section(breakdowns);
}

// What the fitted values say, with the numbers in them.
std::string reading_notes(const Context& c, const std::map<std::string, std::vector<engine::FitParameter>>& bounds) {
  const auto& exo = c.profiles.at("exo-tensor-rdma");
  const auto& cpp = c.profiles.at("llamacpp-rpc-tcp");
  std::string out = "\nReading the fit:\n\n";
  std::set<std::string> seen;  // a shared parameter is listed under every stack that takes it
  for (const auto& [stack, list] : bounds)
    for (const auto& b : list) {
      const double v = c.profiles.at(stack).get(b.key), span = b.upper - b.lower;
      if (!seen.insert(b.profile + "/" + b.key).second) continue;
      if (v - b.lower < 1e-3 * span || b.upper - v < 1e-3 * span)
        out += fmt::format("- {} {} sits at its bound ({:.4g}): the rows push it there and say nothing finer.\n",
                           b.profile, b.key, v);
    }
  out += fmt::format(
      "- The M3 Ultra's GPU, for every stack: {:.0f}% of 819 GB/s while streaming weights; in prefill, {:.0f}% of "
      "peak FLOP/s in dense matmuls (fitted to MLX's Llama-3.1-8B and llama.cpp's Llama 3.2 3B and 3.3 70B prefill "
      "together) and {:.0f}% in the routed-expert matmuls of MoE (a few tokens per expert; MLX's Kimi K2.6 and "
      "llama.cpp's DeepSeek R1 prefill).\n",
      100 * exo.memory_bandwidth_efficiency, 100 * exo.compute_efficiency, 100 * exo.expert_compute_efficiency);
  out += fmt::format("- MLX (exo, mlx-lm): {:.1f} us per kernel, its one parameter of its own.\n",
                     1e6 * exo.per_kernel_overhead_s);
  out += fmt::format(
      "- llama.cpp: {:.1f} us per kernel plus {:.1f} us per routed expert an expert kernel reads (it runs a matmul "
      "per expert: MoE decode is slower than its bytes say, in Qwen3 and DeepSeek R1 alike).\n",
      1e6 * cpp.per_kernel_overhead_s, 1e6 * cpp.per_expert_overhead_s);
  out += fmt::format(
      "- The kernels come from each model's architecture (engine/plan/layer_kernels.hpp): one decode token launches {} "
      "kernels for Qwen3-235B (GQA, MoE), {} for Kimi K2 and {} for DeepSeek-V3.1 (MLA, MoE with a shared expert), "
      "{} for Llama-3.3-70B (GQA, dense); a kernel's dispatch replaces what was one fitted constant per layer.\n",
      kernels_per_token(c.catalog.model("qwen3-235b-a22b")), kernels_per_token(c.catalog.model("kimi-k2.6")),
      kernels_per_token(c.catalog.model("deepseek-v3.1")), kernels_per_token(c.catalog.model("llama-3.3-70b")));
  out += fmt::format(
      "- llama.cpp's RPC costs {:.2f} ms per message on top of TCP: an effective figure for what a remote stage "
      "costs per token (command, graph, activations), which these rows cannot split further. A cost linear in the "
      "number of remote stages is what the model can express; in the published figures the first remote stage costs "
      "more than each later one, hence the 2-node row's larger error.\n",
      1e3 * cpp.per_message_overhead_s);
  return out;
}

std::string parameters_section(const Context& c) {
  std::string out =
      "\n## Fitted parameters\n\nFrom `scenarios/catalog/profiles/NAME.json` (units and meanings are in the files). "
      "A parameter without bounds was not fitted; one that names a profile lives there and is shared: "
      "`m3-ultra-metal` holds what the M3 Ultra's GPU gives every stack, fitted to every stack's rows at once.\n\n"
      "| parameter |";
  for (const char* stack : kStacks) out += fmt::format(" {} |", stack);
  out += "\n|---|";
  for (std::size_t i = 0; i < std::size(kStacks); ++i) out += "---:|";
  out += "\n";
  std::map<std::string, std::vector<engine::FitParameter>> bounds;
  for (const auto& p : engine::stack_fit_parameters(c.catalog.dir(), {std::begin(kStacks), std::end(kStacks)}))
    for (const auto& stack : p.stacks) bounds[stack].push_back(p);
  for (const std::string& key : engine::StackCard::numeric_keys()) {
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
  std::string out =
      "\n---\n\n# Predictions (not fitted, not measured)\n\nThe same profiles on rows nobody published. Where the "
      "planner "
      "refuses, the row says why and by how much the memory falls short.\n\n## DeepSeek-V3.1 and Kimi-K2-Thinking\n\n";
  out += prediction_rows(c, predicted_rows(), breakdowns);
  out += "\n## Llama-3.3-70B, tensor parallel over RDMA\n\n";
  std::vector<CalibrationRow> llama;
  for (int n : {1, 4}) llama.push_back(prediction("llama-3.3-70b", "8bit", "exo-tensor-rdma", n));
  out += prediction_rows(c, llama, breakdowns);
  return out + breakdown_section(breakdowns);
}

std::string planning_section(const Context& c, const CrossValidation& cv, int jobs) {
  const std::vector<std::string> stacks(std::begin(kStacks), std::end(kStacks));
  std::map<std::string, PlanningUncertainty> uncertainty;
  for (const auto& stack : stacks)
    uncertainty.emplace(stack, planning_uncertainty(stack, c.profiles.at(stack).based_on, cv));
  const auto rows = planning_rows(c.catalog, stacks);
  return planning_table(rows, run_rows(rows, c.m.cluster, c.catalog, c.profiles, jobs), uncertainty);
}

// Batch-1 decode after ever longer prompts: every token's attention reads the whole KV cache.
std::string context_section(const Context& c) {
  const int contexts[] = {1024, 8192, 32768, 131072};
  std::string out =
      "\n## Decode as the context grows\n\nOne node, batch 1, decode tokens/s after a prompt of each length: "
      "every token's attention reads the whole KV cache of every layer (GQA: K and V of the KV heads; MLA: the "
      "compressed latent), on top of the weights.\n\n| model | quant | stack |";
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
  engine::StackCard& q = ideal.profiles.at("exo-tensor-rdma");
  for (const char* key : {"per_kernel_overhead_us", "per_expert_overhead_us"}) q.set(key, 0);
  engine::Catalog instant = c.catalog;
  engine::LinkCard link = scaled_link(c.catalog.link("tb5-rdma"), "instant", 0, 1e6);
  link.per_message_overhead_s = 0;
  instant.add(link);
  const double no_overhead = ideal.run(four).tokens_per_s, no_overhead_1 = ideal.run(one).tokens_per_s;
  const double no_comm = c.run(four, "instant", &instant).tokens_per_s;
  const double neither = ideal.run(four, "instant", &instant).tokens_per_s;
  const auto& n4 = r4.nodes.at(0);
  std::string out = "\n## Why 4 nodes are far less than 4x faster than one\n\n";
  out += fmt::format(
      "Qwen3-235B 8-bit on exo-tensor-rdma: one node decodes at {:.2f} tok/s ({:.1f} ms a token), four at {:.2f} "
      "({:.1f} ms), a {:.2f}x speed-up. In the simulation a 4-node token on m1 is {:.1f} ms of compute, {:.1f} ms of "
      "communication and {:.1f} ms of waiting. Of the compute, {:.1f} ms is the dispatch cost of {} kernels "
      "({:.1f} us each, fitted): every node pays it in full, whatever its share of the weights. Only weight streaming "
      "divides by the node count. Tensor parallel adds two all-reduces per layer, {} per token, each a few "
      "microseconds of latency and per-message cost.\n\n",
      r1.tokens_per_s, kMs / r1.tokens_per_s, r4.tokens_per_s, kMs / r4.tokens_per_s, r4.tokens_per_s / r1.tokens_per_s,
      kMs * n4.compute_s, kMs * n4.comm_s, kMs * n4.wait_s, kMs * fixed, kernels, 1e6 * p.per_kernel_overhead_s,
      2 * model.layers);
  out +=
      "What the simulation gives when each cause is removed:\n\n| case | 1 node (tok/s) | 4 nodes (tok/s) | speed-up "
      "|\n"
      "|---|---:|---:|---:|\n";
  const std::vector<Ablation> rows = {
      {"as calibrated", r1.tokens_per_s, r4.tokens_per_s},
      {"no per-kernel/per-expert overhead", no_overhead_1, no_overhead},
      {"instant network (no latency, no per-message cost, 1e6x bandwidth)", r1.tokens_per_s, no_comm},
      {"both removed", no_overhead_1, neither}};
  for (const auto& a : rows)
    out += fmt::format("| {} | {:.2f} | {:.2f} | {:.2f}x |\n", a.what, a.one, a.four, a.four / a.one);
  out += fmt::format(
      "\nThe fixed per-kernel software cost is the main brake (removing it alone lifts the speed-up from "
      "{:.2f}x to {:.2f}x); the network comes second ({:.2f}x with an instant network alone). With both "
      "removed the speed-up is {:.2f}x: weight streaming itself divides evenly over the nodes.\n",
      r4.tokens_per_s / r1.tokens_per_s, no_overhead / no_overhead_1, no_comm / r1.tokens_per_s,
      neither / no_overhead_1);
  return out;
}

std::string sensitivity_section(const Context& c) {
  std::string out =
      "\n## Sensitivity: 4-node decode when the link changes\n\nThe link card's one-way latency or "
      "bandwidth scaled (per-message software costs unchanged), 4 nodes, Qwen3-235B as calibrated. "
      "In brackets: the change against the calibrated speed.\n\n"
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
    notes += fmt::format(
        "- {}: a decode message costs {:.0f} us of software at the sender, {:.3g} us of latency and "
        "{:.1f} us on the wire ({:.0f} bytes of activations, {}). Messages are small, so latency "
        "moves the result more than bandwidth, and both are small next to the token time.\n",
        stack, 1e6 * per_message, 1e6 * link.latency_s, 1e6 * wire_s, activation_bytes, wire_how);
  }
  return out + "\nWhy it moves so little:\n\n" + notes;
}

std::string header(const std::string& measurements_file) {
  return fmt::format(
      "# Calibration: the simulator against published measurements\n\n"
      "Generated by `scripts/calibration-report` (fits both stacks and the hardware profile they share, rewrites the "
      "profiles and this file; "
      "`meshinfer calibrate {0} --no-fit --report reports/calibration.md` re-renders without refitting). "
      "Measurements: `{0}`, a copy of `shared/calibration/published.json` (sources in REFERENCE.md).\n\n"
      "How a row is simulated: an n-node row runs on the first n machines of the published cluster "
      "(1 node: one M3 Ultra 512 GB; 2: the two 512 GB; 4: all four, two of them 256 GB), over a full mesh of "
      "`tb5-rdma` with tensor parallel for exo, or `tb5-tcp` with llama.cpp's RPC pipeline (every stage boundary "
      "through the client, a command round trip per stage) for llama.cpp. A decode row is one request, a "
      "{1}-token prompt then {2} tokens, measured over the decode steps; a prefill row is one request of its prompt "
      "length producing one token, in 512-token chunks. exo-mlx (prefill on one node) and mlx-lm-local (Kimi K2.6 on "
      "one node; its decode rows decode after their 1,024-token prompt) use the exo profile: the same MLX kernels. "
      "The Kimi K2.6 quantizations are mixed (routed experts mostly 3-bit, important layers 8-bit or bf16): every "
      "weight but the routed experts' is simulated at 8.5 bits, the experts at what keeps the published average. "
      "llamacpp-local rows use the llama.cpp "
      "profile: the same software on the same hardware. "
      "The llama.cpp Qwen3 rows are published as \"q4_k_m?\": the quantization is uncertain and is simulated as "
      "q4_k_m (4.82 bits a weight).\n\n",
      measurements_file, engine::kDecodePromptTokens, engine::kDecodeOutputTokens);
}

}  // namespace

void write_calibration_report(const engine::Measurements& m, const std::string& measurements_file,
                              const engine::Catalog& catalog, const CrossValidation& cv, int jobs,
                              const std::string& out) {
  Context c{m, catalog, {}};
  for (const char* stack : kStacks) c.profiles.emplace(stack, engine::StackCard::load(catalog.dir(), stack));
  const std::string text = header(measurements_file) + fitted_section(c, cv) + parameters_section(c) +
                           predictions_section(c) + planning_section(c, cv, jobs) + context_section(c) +
                           why_section(c) + sensitivity_section(c);
  std::ofstream o(out);
  if (!(o << text)) throw std::runtime_error("cannot write " + out);
}

}  // namespace sim
