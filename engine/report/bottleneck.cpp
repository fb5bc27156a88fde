#include "engine/report/bottleneck.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace engine {

namespace {

using nlohmann::ordered_json;

constexpr double kMs = 1e3;

std::string ms(const ordered_json& seconds) { return fmt::format("{:.2f}", kMs * seconds.get<double>()); }

std::string markdown_row(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const auto& c : cells) line += " " + c + " |";
  return line + "\n";
}

// The header cells of a table of terms, after `first`, and its rule.
std::string terms_header(std::vector<std::string> first, const std::vector<std::string>& last) {
  for (const auto& t : term_names()) first.push_back(std::string(t.name) + " ms");
  first.push_back("floor ms");
  first.insert(first.end(), last.begin(), last.end());
  std::string rule = "|";
  for (std::size_t i = 0; i < first.size(); ++i) rule += " --- |";
  return markdown_row(first) + rule + "\n";
}

std::vector<std::string> term_cells(const ordered_json& terms) {
  std::vector<std::string> cells;
  for (const auto& t : term_names()) cells.push_back(ms(terms[t.key]));
  cells.push_back(ms(terms["floor_s"]));
  return cells;
}

std::string count_list(const ordered_json& scaling) {
  std::string out;
  for (const auto& p : scaling["points"]) out += (out.empty() ? "" : ", ") + std::to_string(p["nodes"].get<int>());
  return out;
}

double sum(const std::vector<std::uint64_t>& v) {
  return static_cast<double>(std::accumulate(v.begin(), v.end(), std::uint64_t{0}));
}

// Step `st` lasting `token_s`, with `outside_s` of the node's communication
// between steps (rank 0 sending the step's plan) charged to it as latency.
TokenTerms step_terms(const StepTrace& st, double token_s, double outside_s) {
  TokenTerms t;
  t.token_s = token_s;
  t.tokens = st.tokens;
  const OpTime& m = st.modelled;
  const double modelled = m.memory_s + m.arithmetic_s + m.dispatch_s;
  if (modelled > 0) {
    t.weight_reads_s = st.compute_s * m.memory_s / modelled;
    t.arithmetic_s = st.compute_s * m.arithmetic_s / modelled;
    t.dispatch_s = st.compute_s * m.dispatch_s / modelled;
    t.floor_s = m.floor_s;
  } else {
    t.arithmetic_s = st.compute_s;
    t.measured = st.compute_s > 0;
  }
  const double comm = st.comm_s - st.wait_s;
  const double bytes = sum(st.bytes_to), relayed = sum(st.relayed);
  const double bandwidth = st.link_bandwidth > 0 ? bytes / st.link_bandwidth : 0;
  const double latency = st.messages * st.message_s;
  // A detour's second hop: its bytes again, and the latency of the messages that took it.
  const double relay = bytes > 0 ? relayed / bytes * (latency + bandwidth) : 0;
  const double charged = latency + bandwidth + relay;
  if (charged > 0) {
    t.latency_s = comm * latency / charged;
    t.bandwidth_s = comm * bandwidth / charged;
    t.relay_s = comm * relay / charged;
  } else {
    t.latency_s = comm;
  }
  t.latency_s += outside_s;
  t.waiting_s = token_s - t.compute_s() - t.comm_s();
  return t;
}

ordered_json terms_json(const TokenTerms& t) {
  ordered_json j{{"token_s", t.token_s}};
  const double values[] = {t.weight_reads_s, t.arithmetic_s, t.dispatch_s, t.latency_s,
                           t.bandwidth_s,    t.relay_s,      t.waiting_s};
  for (std::size_t i = 0; i < term_names().size(); ++i) j[term_names()[i].key] = values[i];
  j["floor_s"] = t.floor_s;
  j["tokens"] = t.tokens;
  if (t.measured) j["compute_measured"] = true;
  return j;
}

ordered_json kind_json(const Scenario& s, const RunResult& r, StepKind kind) {
  ordered_json nodes = ordered_json::array();
  std::optional<TokenTerms> pace;
  std::string pace_node;
  for (std::size_t n = 0; n < r.nodes.size(); ++n) {
    const auto t = node_terms(r.nodes[n], kind);
    if (!t) continue;
    ordered_json row{{"node", s.nodes[n].name}, {"hardware", s.nodes[n].hardware}};
    row.update(terms_json(*t));
    nodes.push_back(std::move(row));
    if (!pace || t->waiting_s < pace->waiting_s) {
      pace = t;
      pace_node = s.nodes[n].name;
    }
  }
  if (!pace) return nullptr;
  ordered_json j{{"node", pace_node}};
  j.update(terms_json(*pace));
  j["nodes"] = std::move(nodes);
  return j;
}

}  // namespace

const std::vector<TermName>& term_names() {
  static const std::vector<TermName> names{{"weight_reads_s", "weight reads"},
                                           {"arithmetic_s", "arithmetic"},
                                           {"dispatch_s", "dispatch"},
                                           {"collective_latency_s", "collective latency"},
                                           {"collective_bandwidth_s", "collective bandwidth"},
                                           {"relay_s", "relay hops"},
                                           {"waiting_s", "waiting"}};
  return names;
}

std::optional<TokenTerms> node_terms(const NodeResult& node, StepKind kind) {
  const auto& steps = node.steps;
  if (steps.empty()) return std::nullopt;
  double outside = node.traffic.comm_s - node.traffic.wait_s;
  for (const StepTrace& st : steps) outside -= st.comm_s - st.wait_s;
  outside /= static_cast<double>(steps.size());
  struct Candidate {
    double interval_s, weight;
    std::size_t step;
  };
  std::vector<Candidate> picked;
  double total = 0;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const StepTrace& st = steps[k];
    const bool decode = kind == StepKind::kDecode;
    const double weight = decode ? st.tokens - st.prefill_tokens : st.prefill_tokens > 0;
    if (weight <= 0 || (decode && k == 0)) continue;
    // A decode token is as far from the last as the previous step's end from this one's.
    picked.push_back({st.end_s - (decode ? steps[k - 1].end_s : st.start_s), weight, k});
    total += weight;
  }
  if (picked.empty()) return std::nullopt;
  std::stable_sort(picked.begin(), picked.end(),
                   [](const Candidate& a, const Candidate& b) { return a.interval_s < b.interval_s; });
  double seen = 0;
  for (const Candidate& c : picked) {
    if ((seen += c.weight) < total / 2) continue;
    const StepTrace& st = steps[c.step];
    // Communication between the steps (rank 0 sending the step's plan) fits in the gap before this one.
    const double gap = st.start_s - (st.end_s - c.interval_s);
    return step_terms(st, c.interval_s, std::max(0.0, std::min(outside, gap)));
  }
  return std::nullopt;  // not reached: the weights add up to total
}

ordered_json bottleneck_json(const Scenario& s, const RunResult& r) {
  return {{"decode", kind_json(s, r, StepKind::kDecode)}, {"prefill", kind_json(s, r, StepKind::kPrefill)}};
}

std::string terms_line(const ordered_json& terms) {
  std::string line = fmt::format("{:.2f} ms =", kMs * terms["token_s"].get<double>());
  for (std::size_t i = 0; i < term_names().size(); ++i)
    line += fmt::format("{} {} {:.2f}", i ? " +" : "", term_names()[i].name,
                        kMs * terms[term_names()[i].key].get<double>());
  if (terms["floor_s"].get<double>() > 0)
    line += fmt::format("; floor {:.2f} ms", kMs * terms["floor_s"].get<double>());
  return line;
}

std::string held_back(const ordered_json& point) {
  if (!point.contains("limit")) return "";
  const auto& l = point["limit"];
  std::string out = fmt::format("{} ({:+.2f} ms past perfect scaling)", l["name"].get<std::string>(),
                                kMs * l["excess_s"].get<double>());
  if (point.contains("then"))
    out += fmt::format(", then {} ({:+.2f} ms)", point["then"]["name"].get<std::string>(),
                       kMs * point["then"]["excess_s"].get<double>());
  return out;
}

std::string bottleneck_markdown(const ordered_json& b, const ordered_json& itl) {
  const auto& decode = b["decode"];
  const auto& prefill = b["prefill"];
  std::string out = "\n## Where a token's time goes\n\n";
  if (decode.is_null() && prefill.is_null()) return out + "No step ran.\n";
  if (!decode.is_null())
    out +=
        fmt::format("One decode token on {} (the node that waited least, so sets the pace; ITL p50 {:.2f} ms): {}.\n",
                    decode["node"].get<std::string>(), kMs * itl["p50"].get<double>(), terms_line(decode));
  if (!prefill.is_null())
    out += fmt::format("{}One prefill step ({:.0f} tokens) on {}: {}.\n", decode.is_null() ? "" : "\n",
                       prefill["tokens"].get<double>(), prefill["node"].get<std::string>(), terms_line(prefill));
  out += "\n" + terms_header({"step", "node", "step ms"}, {});
  for (const char* kind : {"decode", "prefill"}) {
    if (b[kind].is_null()) continue;
    for (const auto& n : b[kind]["nodes"]) {
      std::vector<std::string> cells{kind, n["node"].get<std::string>(), ms(n["token_s"])};
      const auto terms = term_cells(n);
      cells.insert(cells.end(), terms.begin(), terms.end());
      out += markdown_row(cells);
    }
  }
  out +=
      "\nCompute is split by the cost model's roofline terms of the same kernels (weight reads: the kernels bound by "
      "the bytes they read, weights, KV cache and activations; arithmetic: those bound by their FLOPs; dispatch: the "
      "stack's cost per kernel). Communication, the time inside send and receive while a message was under way, is "
      "split in proportion to what the link card charges the step's messages: latency and per-message overheads per "
      "message, bytes over bandwidth, and a detour's second hop. Waiting is the rest: blocked on a peer that had not "
      "sent yet, or between steps (in a pipeline, the other stages' turn). The floor is the same kernels at the card's "
      "full memory bandwidth or peak "
      "FLOP/s, whichever binds, with no dispatch. Each row is its node's median step: for decode, the one whose "
      "interval (the previous step's end to its end) is the median, as the ITL p50 is.\n";
  if (b.contains("scaling")) out += "\n" + scaling_markdown(b["scaling"]);
  return out;
}

std::string scaling_markdown(const ordered_json& scaling) {
  std::string out = fmt::format(
      "### Scaling: {} nodes\n\nThe same model, stack, link and {} plan on the first {} nodes, each simulated on {} "
      "at the flow level. Speedup is over the previous row; held back by: the term that grew most past perfect "
      "scaling (its time on the previous row x that row's nodes / this row's). In a pipeline the stages run one "
      "after another, so waiting is the other stages' turn and an added stage divides no token.\n\n",
      count_list(scaling), scaling["strategy"].get<std::string>(), count_list(scaling),
      scaling["workload"].get<std::string>());
  out += terms_header({"nodes", "decode tok/s", "speedup", "ITL ms"}, {"held back by"});
  for (const auto& p : scaling["points"]) {
    const std::string nodes = std::to_string(p["nodes"].get<int>());
    if (p["status"] != "simulated") {
      out += markdown_row({nodes, p["status"].get<std::string>() + ": " + p["reason"].get<std::string>()});
      continue;
    }
    std::vector<std::string> cells{nodes, fmt::format("{:.2f}", p["decode_tokens_per_s"].get<double>()),
                                   p.contains("speedup") ? fmt::format("x{:.2f}", p["speedup"].get<double>()) : "",
                                   ms(p["decode"]["token_s"])};
    const auto terms = term_cells(p["decode"]);
    cells.insert(cells.end(), terms.begin(), terms.end());
    cells.push_back(held_back(p));
    out += markdown_row(cells);
  }
  return out;
}

std::string scaling_text(const ordered_json& scaling) {
  std::string out = fmt::format("scaling ({} plan, {}):\n", scaling["strategy"].get<std::string>(),
                                scaling["workload"].get<std::string>());
  for (const auto& p : scaling["points"]) {
    const int n = p["nodes"];
    if (p["status"] != "simulated") {
      out += fmt::format("  {} node{}: {}: {}\n", n, n == 1 ? "" : "s", p["status"].get<std::string>(),
                         p["reason"].get<std::string>());
      continue;
    }
    out += fmt::format(
        "  {} node{}: {:.2f} tok/s{}, token {}\n", n, n == 1 ? "" : "s", p["decode_tokens_per_s"].get<double>(),
        p.contains("speedup") ? fmt::format(" (x{:.2f})", p["speedup"].get<double>()) : "", terms_line(p["decode"]));
    if (p.contains("limit")) out += "    held back by " + held_back(p) + "\n";
  }
  return out;
}

}  // namespace engine
