#include "engine/report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <stdexcept>

#include "engine/base/build_info.hpp"
#include "engine/faults/cable_downtime.hpp"
#include "engine/node/invariants.hpp"
#include "engine/report/bottleneck.hpp"
#include "engine/report/markdown.hpp"
#include "engine/report/report_html.hpp"
#include "engine/report/run_figures.hpp"
#include "engine/report/timeline.hpp"

namespace engine {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr const char* kSchema = "meshinfer.report/1";
constexpr double kGB = 1e9;

// Nearest rank: the smallest value with at least p% of the values at or below it.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100 * sorted.size()));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

ordered_json distribution(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const double mean = ratio(std::accumulate(values.begin(), values.end(), 0.0), values.size());
  return {{"p50", percentile(values, 50)}, {"p99", percentile(values, 99)}, {"mean", mean}};
}

ordered_json time_or_null(double t) { return t >= 0 ? ordered_json(t) : ordered_json(nullptr); }

ordered_json plan_json(const Plan& plan) {
  ordered_json nodes = ordered_json::array();
  for (const Shard& sh : plan.shards) {
    nodes.push_back({{"rank", sh.node},
                     {"node", sh.node_name},
                     {"hardware", sh.hardware},
                     {"layers", {sh.first_layer, sh.end_layer - 1}},
                     {"heads", sh.heads},
                     {"kv_heads", sh.kv_heads},
                     {"ffn_fraction", sh.ffn_fraction},
                     {"experts", sh.experts},
                     {"vocab_fraction", sh.vocab_fraction},
                     {"weight_gb", sh.weight_bytes / kGB},
                     {"memory_gb", sh.memory_bytes / kGB},
                     {"free_gb", sh.free_bytes() / kGB},
                     {"kv_bytes_per_token", sh.kv_bytes_per_token}});
  }
  return {{"strategy", plan.strategy}, {"kv_capacity_tokens", plan.kv_capacity_tokens}, {"nodes", nodes}};
}

ordered_json summary_json(const RunResult& r) {
  double decode_tokens = 0, decode_s = 0, prefill_tokens = 0, prefill_s = 0;
  for (const StepRecord& st : r.steps) {
    const double d = st.end_s - st.start_s;
    if (st.decode_tokens > 0) {
      decode_tokens += st.decode_tokens;
      decode_s += d;
    }
    if (st.prefill_tokens > 0) {
      prefill_tokens += st.prefill_tokens;
      prefill_s += d;
    }
  }
  std::vector<double> decode_rates;
  int done = 0, retried = 0;
  std::size_t output_tokens = 0;
  for (const RequestRecord& rec : r.requests) {
    const auto& t = rec.token_times;
    output_tokens += t.size();
    retried += rec.tries > 1;
    if (!completed(rec)) continue;
    ++done;
    if (t.size() >= 2 && rec.finish_s > rec.first_token_s)
      decode_rates.push_back((t.size() - 1) / (rec.finish_s - rec.first_token_s));
  }
  const int total = static_cast<int>(r.requests.size());
  const double per_request = ratio(std::accumulate(decode_rates.begin(), decode_rates.end(), 0.0), decode_rates.size());
  Latencies l = latencies(r);
  const double down = out_of_service_s(r);
  return {{"decode_tokens_per_s", ratio(decode_tokens, decode_s)},
          {"prefill_tokens_per_s", ratio(prefill_tokens, prefill_s)},
          {"per_request_decode_tokens_per_s", per_request},
          {"ttft_s", distribution(std::move(l.ttft))},
          {"itl_s", distribution(std::move(l.itl))},
          {"requests", {{"total", total}, {"completed", done}, {"failed", total - done}, {"retried", retried}}},
          {"output_tokens", output_tokens},
          {"simulated_s", r.end_s},
          {"uptime", r.end_s > 0 ? 1 - down / r.end_s : 1.0},
          {"out_of_service_s", down},
          {"request_success", total > 0 ? ratio(done, total) : 1.0}};
}

// First time an event of `kind` happened at or after `from`; negative when none.
double first(const RunResult& r, const std::string& kind, double from) {
  for (const RunEvent& e : r.events)
    if (e.kind == kind && e.t_s >= from) return e.t_s;
  return -1;
}

ordered_json events_json(const RunResult& r) {
  ordered_json out = ordered_json::array();
  for (const RunEvent& e : r.events)
    out.push_back({{"t_s", e.t_s}, {"kind", e.kind}, {"target", e.target}, {"detail", e.detail}});
  return out;
}

// The senders whose numbering showed a receiver a lost message: a gap found,
// or (a runtime at fault) a message taken past one never taken.
ordered_json sequences_json(const Scenario& s, const RunResult& r) {
  ordered_json out = ordered_json::array();
  for (const Sequence& q : r.sequences)
    if (q.gap_s >= 0 || q.taken != q.numbered)
      out.push_back({{"from", s.nodes[q.from].name},
                     {"to", s.nodes[q.to].name},
                     {"taken", q.taken},
                     {"numbered", q.numbered},
                     {"gap_s", time_or_null(q.gap_s)}});
  return out;
}

// How the run served in [from, to): tokens a second, and the p50 of the
// inter-token gaps and of the TTFTs that ended in it; null when nothing did.
ordered_json serving_between(const RunResult& r, double from, double to) {
  if (to <= from) return nullptr;
  std::vector<double> itl, ttft;
  double tokens = 0;
  for (const RequestRecord& rec : r.requests) {
    const auto& t = rec.token_times;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] < from || t[i] >= to) continue;
      tokens += 1;
      if (i > 0) itl.push_back(t[i] - t[i - 1]);
    }
    if (rec.first_token_s >= from && rec.first_token_s < to) ttft.push_back(rec.first_token_s - rec.arrival_s);
  }
  if (tokens == 0) return nullptr;
  std::sort(itl.begin(), itl.end());
  std::sort(ttft.begin(), ttft.end());
  return {{"from_s", from},
          {"to_s", to},
          {"decode_tokens_per_s", tokens / (to - from)},
          {"itl_p50_s", itl.empty() ? ordered_json(nullptr) : ordered_json(percentile(itl, 50))},
          {"ttft_p50_s", ttft.empty() ? ordered_json(nullptr) : ordered_json(percentile(ttft, 50))}};
}

// What the faults cost: detection and recovery times from the first fault,
// downtime until serving again (or the end), work redone, failures by cause.
// A fault due after the run ended was never applied: it is counted apart.
ordered_json faults_json(const RunResult& r) {
  int count = 0, after_the_end = 0;
  double fault = -1;
  for (const RunEvent& e : r.events) {
    if (!injected(e)) continue;
    if (e.t_s > r.end_s) {
      ++after_the_end;
      continue;
    }
    ++count;
    if (fault < 0) fault = e.t_s;
  }
  const double detected = fault >= 0 ? first(r, "detected", fault) : -1;
  const double recovered = detected >= 0 ? first(r, "recovered", detected) : -1;
  std::map<std::string, int> causes;
  for (const RequestRecord& rec : r.requests)
    if (!rec.error.empty()) causes[rec.error] += 1;
  ordered_json by_cause = ordered_json::object();
  for (const auto& [cause, n] : causes) by_cause[cause] = n;
  return {{"injected", count},
          {"not_applied", after_the_end},
          {"first_fault_s", time_or_null(fault)},
          {"time_to_detect_s", detected >= 0 ? ordered_json(detected - fault) : ordered_json(nullptr)},
          {"time_to_recover_s", recovered >= 0 ? ordered_json(recovered - detected) : ordered_json(nullptr)},
          {"downtime_s", fault >= 0 && detected >= 0 ? ordered_json((recovered >= 0 ? recovered : r.end_s) - fault)
                                                     : ordered_json(0.0)},
          {"tokens_recomputed", r.tokens_recomputed},
          {"failed_by_cause", by_cause},
          // Serving before the first fault and after the recovery, side by side: what the recovery cost.
          {"before", fault >= 0 ? serving_between(r, 0, fault) : ordered_json(nullptr)},
          {"after", recovered >= 0 ? serving_between(r, recovered, r.end_s) : ordered_json(nullptr)}};
}

ordered_json nodes_json(const Scenario& s, const RunResult& r) {
  ordered_json nodes = ordered_json::array();
  for (std::size_t i = 0; i < r.nodes.size(); ++i) {
    const NodeResult& n = r.nodes[i];
    const auto& t = n.traffic;
    nodes.push_back({{"rank", i},
                     {"name", s.nodes[i].name},
                     {"hardware", s.nodes[i].hardware},
                     {"compute_s", n.compute_s},
                     {"comm_s", t.comm_s},
                     {"idle_s", std::max(0.0, r.end_s - n.compute_s - t.comm_s)},
                     {"utilization", ratio(n.compute_s, r.end_s)},
                     {"bytes_sent", std::accumulate(t.bytes_to.begin(), t.bytes_to.end(), std::uint64_t{0})},
                     {"messages_sent", std::accumulate(t.messages_to.begin(), t.messages_to.end(), std::uint64_t{0})},
                     {"error", n.error}});
  }
  return nodes;
}

ordered_json links_json(const Scenario& s, const Catalog& catalog, const RunResult& r) {
  ordered_json links = ordered_json::array();
  const auto downtimes = cable_downtimes(s, catalog, r.end_s);
  for (std::size_t k = 0; k < s.fabric.cables.size(); ++k) {
    const Cable& c = s.fabric.cables[k];
    const auto ab = bytes_between(r, c.a, c.b), ba = bytes_between(r, c.b, c.a);
    links.push_back(
        {{"a", s.nodes[c.a].name},
         {"b", s.nodes[c.b].name},
         {"link", c.link},
         {"bytes_a_to_b", ab},
         {"bytes_b_to_a", ba},
         {"utilization", ratio(static_cast<double>(std::max(ab, ba)), catalog.link(c.link).bandwidth * r.end_s)}});
    for (const Downtime& d : downtimes[k])  // only a cable that went down has the key
      links.back()["down"].push_back({{"from_s", d.from_s}, {"to_s", time_or_null(d.to_s)}});
  }
  return links;
}

// Every link card the run used, by its figures: which card a run was judged
// on (a probed one, or the catalog's) travels with its report.
ordered_json link_cards_json(const Scenario& s, const Catalog& catalog) {
  std::vector<std::string> names;
  for (const Cable& c : s.fabric.cables) names.push_back(c.link);
  if (s.fabric.secondary_link) names.push_back(*s.fabric.secondary_link);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  ordered_json cards = ordered_json::array();
  for (const std::string& name : names) {
    const LinkCard& l = catalog.link(name);
    cards.push_back({{"name", l.name},
                     {"bandwidth_gbps", l.bandwidth * 8 / kGB},
                     {"latency_us", l.latency_s * 1e6},
                     {"per_message_overhead_us", l.per_message_overhead_s * 1e6},
                     {"frame_bytes", l.frame_bytes}});
    if (l.frame_header_bytes > 0) cards.back()["frame_header_bytes"] = l.frame_header_bytes;
    for (const WireTime& p : l.wire_time_by_size)
      cards.back()["wire_time_by_size"].push_back({{"bytes", p.bytes}, {"us", p.seconds * 1e6}});
  }
  return cards;
}

ordered_json requests_json(const RunResult& r) {
  ordered_json requests = ordered_json::array();
  for (const RequestRecord& rec : r.requests) {
    const bool ok = completed(rec);
    requests.push_back({{"id", rec.request.id},
                        {"prompt_tokens", rec.request.prompt_tokens},
                        {"output_tokens", rec.request.output_tokens},
                        {"arrival_s", time_or_null(rec.arrival_s)},
                        {"first_token_s", time_or_null(rec.first_token_s)},
                        {"finish_s", time_or_null(rec.finish_s)},
                        {"ttft_s", ok ? ordered_json(rec.first_token_s - rec.arrival_s) : ordered_json(nullptr)},
                        {"tokens", rec.token_times.size()},
                        {"tries", rec.tries},
                        {"status", ok ? "completed" : "failed"},
                        // No request is silently lost: one that neither finished nor failed says so.
                        {"error", ok || !rec.error.empty() ? rec.error : "not finished when the run ended"}});
    if (!rec.output_ids.empty()) requests.back()["output_ids"] = rec.output_ids;  // computed runs only
  }
  return requests;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
}

}  // namespace

ordered_json build_report(const Scenario& s, const Catalog& catalog, const Plan& plan, const std::string& profile_name,
                          const RunResult& r, unsigned long long seed) {
  ordered_json report;
  report["schema"] = kSchema;
  report["scenario"] = {{"name", s.name},
                        {"file", s.file},
                        {"description", s.description},
                        {"seed", seed},
                        {"model", s.model},
                        {"quant", s.quant},
                        {"parallelism", to_string(s.parallelism)},
                        {"profile", profile_name},
                        {"simulation_level", to_string(s.level)},
                        {"recovery",
                         {{"policy", to_string(s.recovery)},
                          {"heartbeat_s", s.heartbeat_s},
                          {"heartbeat_timeout_s", s.heartbeat_timeout_s}}}};
  report["build"] = {{"version", kVersion}, {"git", kGitCommit}};
  report["plan"] = plan_json(plan);
  report["summary"] = summary_json(r);
  report["bottleneck"] = bottleneck_json(s, r);
  report["nodes"] = nodes_json(s, r);
  report["links"] = links_json(s, catalog, r);
  report["link_cards"] = link_cards_json(s, catalog);
  report["requests"] = requests_json(r);
  report["timeline"] = timeline_json(s, catalog, r);
  report["distributions"] = distributions_json(r);
  report["events"] = events_json(r);
  if (auto lost = sequences_json(s, r); !lost.empty()) report["sequences"] = std::move(lost);
  report["phases"] = recovery_phases(r);
  report["placements"] = ordered_json::array();
  for (const auto& [t, p] : r.placements) report["placements"].push_back({{"t_s", t}, {"plan", plan_json(p)}});
  report["faults"] = faults_json(r);
  if (!report["faults"]["time_to_recover_s"].is_null())
    report["summary"]["recovery_s"] = report["faults"]["downtime_s"];
  report["invariants"] = all_violations(check_invariants(s, r));
  report["expectations"] = ordered_json::array();
  return report;
}

void write_reports(const std::string& dir, const ordered_json& report, const json& trace) {
  const std::filesystem::path root(dir);
  std::filesystem::create_directories(root);
  write_file(root / "report.json", report.dump(2) + "\n");
  write_file(root / "report.md", render_markdown(report));
  write_file(root / "report.html", render_html(report));
  write_file(root / "trace.json", trace.dump() + "\n");
}

}  // namespace engine
