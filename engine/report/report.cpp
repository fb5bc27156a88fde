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
#include <string_view>
#include <utility>

#include "engine/invariants.hpp"
#include "engine/report/report_html.hpp"

namespace engine {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr const char* kSchema = "meshinfer.report/1";
constexpr const char* kVersion = "0.1.0";  // project(VERSION) in CMakeLists.txt
constexpr double kGB = 1e9;
constexpr double kUs = 1e6;  // trace timestamps are in microseconds

bool completed(const RequestRecord& rec) { return rec.error.empty() && rec.finish_s >= 0; }

// Nearest rank: the smallest value with at least p% of the values at or below it.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100 * sorted.size()));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

double ratio(double num, double den) { return den > 0 ? num / den : 0; }

ordered_json distribution(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const double mean = ratio(std::accumulate(values.begin(), values.end(), 0.0), values.size());
  return {{"p50", percentile(values, 50)}, {"p99", percentile(values, 99)}, {"mean", mean}};
}

// Bytes rank `from` sent to rank `to` (a node that never sent has no counters).
std::uint64_t bytes_between(const RunResult& r, int from, int to) {
  const auto& sent = r.nodes[from].traffic.bytes_to;
  return to < static_cast<int>(sent.size()) ? sent[to] : 0;
}

std::string link_label(const std::string& a, const std::string& b) { return a + "<->" + b; }

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

struct Latencies {
  std::vector<double> ttft, itl;  // ttft: completed requests; itl: every request's gaps
};

Latencies latencies(const RunResult& r) {
  Latencies l;
  for (const RequestRecord& rec : r.requests) {
    const auto& t = rec.token_times;
    for (std::size_t i = 1; i < t.size(); ++i) l.itl.push_back(t[i] - t[i - 1]);
    if (completed(rec)) l.ttft.push_back(rec.first_token_s - rec.arrival_s);
  }
  return l;
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
  return {{"decode_tokens_per_s", ratio(decode_tokens, decode_s)},
          {"prefill_tokens_per_s", ratio(prefill_tokens, prefill_s)},
          {"per_request_decode_tokens_per_s", per_request},
          {"ttft_s", distribution(std::move(l.ttft))},
          {"itl_s", distribution(std::move(l.itl))},
          {"requests", {{"total", total}, {"completed", done}, {"failed", total - done}, {"retried", retried}}},
          {"output_tokens", output_tokens},
          {"simulated_s", r.end_s},
          {"availability", total > 0 ? ratio(done, total) : 1.0}};
}

bool injected(const RunEvent& e) {
  return std::find(kFaultKinds.begin(), kFaultKinds.end(), e.kind) != kFaultKinds.end();
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

// From each detection to the recovery (or the instance's end) that followed it;
// an end of null means the run ended first.
ordered_json phases_json(const RunResult& r) {
  ordered_json out = ordered_json::array();
  for (std::size_t i = 0; i < r.events.size(); ++i) {
    const RunEvent& e = r.events[i];
    if (e.kind != "detected" || (!out.empty() && out.back()["end_s"].is_null())) continue;
    ordered_json phase{{"kind", "recovery"}, {"target", e.target}, {"start_s", e.t_s}, {"end_s", nullptr}};
    for (std::size_t j = i + 1; j < r.events.size(); ++j)
      if (r.events[j].kind == "recovered" || r.events[j].kind == "instance-failed") {
        phase["end_s"] = r.events[j].t_s;
        break;
      }
    if (!out.empty() && out.back()["end_s"] == phase["end_s"]) continue;  // the same recovery, noticed twice
    out.push_back(phase);
  }
  return out;
}

// What the faults cost: detection and recovery times from the first fault,
// downtime until serving again (or the end), work redone, failures by cause.
ordered_json faults_json(const RunResult& r) {
  int count = 0;
  double fault = -1;
  for (const RunEvent& e : r.events)
    if (injected(e)) {
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
          {"first_fault_s", time_or_null(fault)},
          {"time_to_detect_s", detected >= 0 ? ordered_json(detected - fault) : ordered_json(nullptr)},
          {"time_to_recover_s", recovered >= 0 ? ordered_json(recovered - detected) : ordered_json(nullptr)},
          {"downtime_s", fault >= 0 && detected >= 0 ? ordered_json((recovered >= 0 ? recovered : r.end_s) - fault)
                                                     : ordered_json(0.0)},
          {"tokens_recomputed", r.tokens_recomputed},
          {"failed_by_cause", by_cause}};
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
  for (const Cable& c : s.fabric.cables) {
    const auto ab = bytes_between(r, c.a, c.b), ba = bytes_between(r, c.b, c.a);
    links.push_back(
        {{"a", s.nodes[c.a].name},
         {"b", s.nodes[c.b].name},
         {"link", c.link},
         {"bytes_a_to_b", ab},
         {"bytes_b_to_a", ba},
         {"utilization", ratio(static_cast<double>(std::max(ab, ba)), catalog.link(c.link).bandwidth * r.end_s)}});
  }
  return links;
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

// --- Timeline and histograms ---------------------------------------------------

constexpr int kTimelineBuckets = 120;

// Buckets of equal width over [0, n * width): values before or after land in
// the first or last bucket.
class Buckets {
 public:
  Buckets(double end_s, int n) : width_(end_s / n), sums_(n, 0.0) {}

  double width() const { return width_; }
  const std::vector<double>& sums() const { return sums_; }

  // Adds `amount` spread evenly over [start, end), or all at `start` when the span is empty.
  void spread(double start, double end, double amount) {
    if (amount == 0) return;
    if (end <= start || width_ <= 0) {
      sums_[index(start)] += amount;
      return;
    }
    const int last = index(end);
    for (int i = index(start); i <= last; ++i) {
      const double lo = i == 0 ? start : std::max(start, i * width_);
      const double hi = i == last ? end : std::min(end, (i + 1) * width_);
      if (hi > lo) sums_[i] += amount * (hi - lo) / (end - start);
    }
  }

 private:
  int index(double t) const {
    const int n = static_cast<int>(sums_.size());
    return width_ > 0 ? std::clamp(static_cast<int>(t / width_), 0, n - 1) : 0;
  }

  double width_;
  std::vector<double> sums_;
};

// A node's steps, each contributing `amount(step)` over its span.
template <typename Amount>
Buckets per_bucket(const std::vector<StepTrace>& steps, double end_s, Amount amount) {
  Buckets b(end_s, kTimelineBuckets);
  for (const StepTrace& st : steps) b.spread(st.start_s, st.end_s, amount(st));
  return b;
}

// Microsecond resolution keeps report.json short; whole units for counts and bytes.
ordered_json micros(const std::vector<double>& seconds) {
  ordered_json out = ordered_json::array();
  for (double v : seconds) out.push_back(std::round(v * kUs) / kUs);
  return out;
}

ordered_json whole(const std::vector<double>& values) {
  ordered_json out = ordered_json::array();
  for (double v : values) out.push_back(std::llround(v));
  return out;
}

ordered_json node_lane(const std::string& name, const NodeResult& n, double end_s) {
  const auto compute = per_bucket(n.steps, end_s, [](const StepTrace& st) { return st.compute_s; });
  const auto comm = per_bucket(n.steps, end_s, [](const StepTrace& st) { return st.comm_s; });
  std::vector<double> idle(kTimelineBuckets);
  for (int i = 0; i < kTimelineBuckets; ++i)
    idle[i] = std::max(0.0, compute.width() - compute.sums()[i] - comm.sums()[i]);
  return {
      {"name", name}, {"compute_s", micros(compute.sums())}, {"comm_s", micros(comm.sums())}, {"idle_s", micros(idle)}};
}

// Bytes node `from` sent to rank `to`, over time.
ordered_json bytes_over_time(const RunResult& r, int from, int to) {
  return whole(per_bucket(r.nodes[from].steps, r.end_s, [to](const StepTrace& st) {
                 return to < static_cast<int>(st.bytes_to.size()) ? static_cast<double>(st.bytes_to[to]) : 0.0;
               }).sums());
}

ordered_json timeline_json(const Scenario& s, const Catalog& catalog, const RunResult& r) {
  ordered_json nodes = ordered_json::array(), links = ordered_json::array();
  for (std::size_t i = 0; i < r.nodes.size(); ++i) nodes.push_back(node_lane(s.nodes[i].name, r.nodes[i], r.end_s));
  for (const Cable& c : s.fabric.cables) {
    links.push_back({{"a", s.nodes[c.a].name},
                     {"b", s.nodes[c.b].name},
                     {"link", c.link},
                     {"bandwidth_bytes_per_s", catalog.link(c.link).bandwidth},
                     {"bytes_a_to_b", bytes_over_time(r, c.a, c.b)},
                     {"bytes_b_to_a", bytes_over_time(r, c.b, c.a)}});
  }
  Buckets tokens(r.end_s, kTimelineBuckets);
  for (const RequestRecord& rec : r.requests)
    for (double t : rec.token_times) tokens.spread(t, t, 1);
  return {{"buckets", kTimelineBuckets},
          {"bucket_s", tokens.width()},
          {"nodes", std::move(nodes)},
          {"links", std::move(links)},
          {"tokens", whole(tokens.sums())}};
}

// Twelve significant digits: bin edges print as 0.03, not 0.030000000000000002.
double tidy(double v) { return std::stod(fmt::format("{:.12g}", v)); }

ordered_json histogram(const std::vector<double>& values) {
  constexpr int kMaxBins = 20;
  if (values.empty()) return {{"start", 0.0}, {"width", 0.0}, {"counts", ordered_json::array()}};
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  // A floor on the width: values equal but for rounding fill one bin, not a thousand.
  const double width = nice_step(std::max({(*hi - *lo) / kMaxBins, *hi * 1e-3, 1e-9}));
  const double start = tidy(std::floor(*lo / width) * width);
  std::vector<double> counts(static_cast<std::size_t>((*hi - start) / width) + 1, 0.0);
  for (double v : values) counts[std::min(counts.size() - 1, static_cast<std::size_t>((v - start) / width))] += 1;
  return {{"start", start}, {"width", tidy(width)}, {"counts", whole(counts)}};
}

ordered_json distributions_json(const RunResult& r) {
  const Latencies l = latencies(r);
  return {{"ttft_s", histogram(l.ttft)}, {"itl_s", histogram(l.itl)}};
}

// Where each metric of kMetrics lives in the report.
constexpr std::pair<std::string_view, std::string_view> kMetricPaths[] = {
    {"decode_tokens_per_s", "/summary/decode_tokens_per_s"},
    {"prefill_tokens_per_s", "/summary/prefill_tokens_per_s"},
    {"ttft_p50_s", "/summary/ttft_s/p50"},
    {"ttft_p99_s", "/summary/ttft_s/p99"},
    {"itl_p50_s", "/summary/itl_s/p50"},
    {"itl_p99_s", "/summary/itl_s/p99"},
    {"failed_requests", "/summary/requests/failed"},
    {"completed_requests", "/summary/requests/completed"},
    {"simulated_s", "/summary/simulated_s"},
    {"availability", "/summary/availability"},
    {"recovery_s", "/summary/recovery_s"},
};

double metric_value(const ordered_json& report, const std::string& metric) {
  for (const auto& [name, path] : kMetricPaths) {
    if (name != metric) continue;
    const ordered_json::json_pointer ptr{std::string(path)};
    // Only recovery_s may be absent: a run without a fault has no recovery.
    return report.contains(ptr) ? report.at(ptr).get<double>() : 0.0;
  }
  throw std::invalid_argument(fmt::format("unknown metric '{}'", metric));
}

bool holds(const Expectation& e, double value) {
  if (e.op == "min") return value >= e.bound;
  if (e.op == "max") return value <= e.bound;
  if (e.op == "eq") return std::abs(value - e.bound) <= 1e-9;
  throw std::invalid_argument(fmt::format("unknown expectation op '{}'", e.op));
}

const char* op_symbol(const std::string& op) { return op == "min" ? ">=" : op == "max" ? "<=" : "=="; }

// --- Markdown ------------------------------------------------------------------

// One table cell: a '|' or a line break in an error message would break the row.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string num(double v) { return fmt::format("{:.3f}", v); }
std::string num(const ordered_json& v) { return num(v.get<double>()); }
std::string pct(const ordered_json& fraction) { return fmt::format("{:.1f}%", 100 * fraction.get<double>()); }
std::string str(const ordered_json& v) { return v.get<std::string>(); }
std::string mb(const ordered_json& bytes) { return num(bytes.get<double>() / 1e6); }

void table(std::string& out, const std::vector<std::string>& header) {
  std::string line = "|", rule = "|";
  for (const auto& h : header) line += " " + h + " |", rule += " --- |";
  out += line + "\n" + rule + "\n";
}

void row(std::string& out, const std::vector<std::string>& cells) {
  out += "|";
  for (const auto& c : cells) out += " " + c + " |";
  out += "\n";
}

// --- Trace ---------------------------------------------------------------------

constexpr int kNodesPid = 1, kLinksPid = 2, kRequestsPid = 3, kFaultsPid = 4;

json metadata(const char* what, int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

json complete(const std::string& name, int pid, int tid, double start_s, double end_s, json args) {
  return {{"ph", "X"},
          {"name", name},
          {"pid", pid},
          {"tid", tid},
          {"ts", start_s * kUs},
          {"dur", (end_s - start_s) * kUs},
          {"args", std::move(args)}};
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
  report["scenario"] = {
      {"name", s.name},   {"file", s.file},   {"description", s.description}, {"seed", seed},
      {"model", s.model}, {"quant", s.quant}, {"parallelism", s.parallelism}, {"profile", profile_name}};
  report["build"] = {{"version", kVersion}, {"git", MESHINFER_GIT}};
  report["plan"] = plan_json(plan);
  report["summary"] = summary_json(r);
  report["nodes"] = nodes_json(s, r);
  report["links"] = links_json(s, catalog, r);
  report["requests"] = requests_json(r);
  report["timeline"] = timeline_json(s, catalog, r);
  report["distributions"] = distributions_json(r);
  report["events"] = events_json(r);
  report["phases"] = phases_json(r);
  report["faults"] = faults_json(r);
  if (!report["faults"]["time_to_recover_s"].is_null())
    report["summary"]["recovery_s"] = report["faults"]["downtime_s"];
  report["invariants"] = check_invariants(s, r);
  report["expectations"] = ordered_json::array();
  return report;
}

double nice_step(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10 * magnitude;
}

std::vector<ExpectationResult> check_expectations(const Scenario& s, ordered_json& report) {
  std::vector<ExpectationResult> results;
  ordered_json out = ordered_json::array();
  for (const Expectation& e : s.expectations) {
    const double value = metric_value(report, e.metric);
    const bool pass = holds(e, value);
    results.push_back({e, value, pass, s.file});
    out.push_back({{"metric", e.metric}, {"op", e.op}, {"bound", e.bound}, {"value", value}, {"pass", pass}});
  }
  report["expectations"] = std::move(out);
  return results;
}

std::string describe_breach(const ExpectationResult& r) {
  return fmt::format("expectation failed: {} = {:g}, must be {} {:g} ({} {})", r.e.metric, r.value, op_symbol(r.e.op),
                     r.e.bound, r.file, r.e.json_path);
}

std::string render_markdown(const ordered_json& report) {
  const auto& sc = report.at("scenario");
  const auto& sum = report.at("summary");
  const auto& build = report.at("build");
  std::string out = fmt::format("# meshinfer: {}\n\n", str(sc.at("name")));
  out += fmt::format("`{}` · {} {} · seed {} · {} plan · profile {} · meshinfer {} ({})\n\n", str(sc.at("file")),
                     str(sc.at("model")), str(sc.at("quant")), sc.at("seed").get<unsigned long long>(),
                     str(report.at("plan").at("strategy")), str(sc.at("profile")), str(build.at("version")),
                     str(build.at("git")));
  if (const std::string d = str(sc.at("description")); !d.empty()) out += d + "\n\n";

  const auto dist = [](const ordered_json& d, double scale, const char* unit) {
    return fmt::format("{:.3f} / {:.3f} / {:.3f} {}", scale * d.at("p50").get<double>(),
                       scale * d.at("p99").get<double>(), scale * d.at("mean").get<double>(), unit);
  };
  const auto& req = sum.at("requests");
  out += "## Summary\n\n";
  table(out, {"metric", "value"});
  row(out, {"decode throughput", num(sum.at("decode_tokens_per_s")) + " tok/s"});
  row(out, {"prefill throughput", num(sum.at("prefill_tokens_per_s")) + " tok/s"});
  row(out, {"per-request decode (mean)", num(sum.at("per_request_decode_tokens_per_s")) + " tok/s"});
  row(out, {"TTFT p50 / p99 / mean", dist(sum.at("ttft_s"), 1, "s")});
  row(out, {"ITL p50 / p99 / mean", dist(sum.at("itl_s"), 1e3, "ms")});
  row(out, {"requests completed / total",
            fmt::format("{} / {} ({} failed, {} retried)", req.at("completed").get<int>(), req.at("total").get<int>(),
                        req.at("failed").get<int>(), req.at("retried").get<int>())});
  row(out, {"output tokens", std::to_string(sum.at("output_tokens").get<std::uint64_t>())});
  row(out, {"simulated time", num(sum.at("simulated_s")) + " s"});
  row(out, {"availability", pct(sum.at("availability"))});

  out += "\n## Plan\n\n";
  table(out, {"node", "hardware", "layers", "heads", "kv heads", "experts", "weights GB", "free GB"});
  for (const auto& n : report.at("plan").at("nodes")) {
    const auto& l = n.at("layers");
    row(out, {str(n.at("node")), str(n.at("hardware")), fmt::format("{}-{}", l.at(0).get<int>(), l.at(1).get<int>()),
              n.at("heads").dump(), n.at("kv_heads").dump(), n.at("experts").dump(), num(n.at("weight_gb")),
              num(n.at("free_gb"))});
  }

  out += "\n## Nodes\n\n";
  table(out, {"node", "compute s", "comm s", "idle s", "utilization", "sent MB", "error"});
  for (const auto& n : report.at("nodes")) {
    row(out, {str(n.at("name")), num(n.at("compute_s")), num(n.at("comm_s")), num(n.at("idle_s")),
              pct(n.at("utilization")), mb(n.at("bytes_sent")), cell(str(n.at("error")))});
  }

  out += "\n## Links\n\n";
  table(out, {"link", "card", "a→b MB", "b→a MB", "utilization"});
  for (const auto& l : report.at("links")) {
    row(out, {link_label(str(l.at("a")), str(l.at("b"))), str(l.at("link")), mb(l.at("bytes_a_to_b")),
              mb(l.at("bytes_b_to_a")), pct(l.at("utilization"))});
  }

  out += "\n## Expectations\n\n";
  const auto& expectations = report.at("expectations");
  if (expectations.empty()) return out + "None.\n";
  table(out, {"metric", "bound", "value", "result"});
  for (const auto& e : expectations) {
    row(out, {str(e.at("metric")), fmt::format("{} {}", op_symbol(str(e.at("op"))), num(e.at("bound"))),
              num(e.at("value")), e.at("pass").get<bool>() ? "PASS" : "FAIL"});
  }
  return out;
}

json render_trace(const Scenario& s, const Plan& plan, const RunResult& r) {
  json events = json::array();
  events.push_back(metadata("process_name", kNodesPid, 0, fmt::format("nodes ({})", plan.strategy)));
  for (std::size_t i = 0; i < s.nodes.size(); ++i)
    events.push_back(metadata("thread_name", kNodesPid, static_cast<int>(i), s.nodes[i].name));
  events.push_back(metadata("process_name", kLinksPid, 0, "links"));
  for (std::size_t i = 0; i < s.fabric.cables.size(); ++i) {
    const Cable& c = s.fabric.cables[i];
    events.push_back(
        metadata("thread_name", kLinksPid, static_cast<int>(i), link_label(s.nodes[c.a].name, s.nodes[c.b].name)));
  }
  events.push_back(metadata("process_name", kRequestsPid, 0, "requests"));
  events.push_back(metadata("thread_name", kRequestsPid, 0, "first tokens"));
  events.push_back(metadata("process_name", kFaultsPid, 0, "faults and recovery"));
  // Global instants for every fault and engine decision; a span per recovery phase.
  for (const RunEvent& e : r.events)
    events.push_back({{"ph", "i"},
                      {"s", "g"},
                      {"cat", "fault"},
                      {"name", e.kind + (e.target.empty() ? "" : " " + e.target)},
                      {"pid", kFaultsPid},
                      {"tid", 0},
                      {"ts", e.t_s * kUs},
                      {"args", {{"detail", e.detail}}}});
  for (const auto& phase : phases_json(r))
    events.push_back(complete("recovering " + phase["target"].get<std::string>(), kFaultsPid, 0,
                              phase["start_s"].get<double>(),
                              phase["end_s"].is_null() ? r.end_s : phase["end_s"].get<double>(), json::object()));

  for (std::size_t rank = 0; rank < r.nodes.size(); ++rank) {
    for (const StepTrace& st : r.nodes[rank].steps) {
      events.push_back(
          complete("step", kNodesPid, static_cast<int>(rank), st.start_s, st.end_s,
                   {{"compute_ms", st.compute_s * 1e3}, {"comm_ms", st.comm_s * 1e3}, {"tokens", st.tokens}}));
    }
  }
  for (std::size_t i = 0; i < s.fabric.cables.size(); ++i) {
    const Cable& c = s.fabric.cables[i];
    events.push_back(complete("traffic (whole run)", kLinksPid, static_cast<int>(i), 0, r.end_s,
                              {{"link", c.link},
                               {"bytes_a_to_b", bytes_between(r, c.a, c.b)},
                               {"bytes_b_to_a", bytes_between(r, c.b, c.a)}}));
  }
  for (const RequestRecord& rec : r.requests) {
    if (rec.arrival_s < 0) continue;  // never arrived: no span to draw
    const int id = rec.request.id;
    const std::string name = fmt::format("req {}", id);
    // A failed request's failure time is not recorded: end at its last sign of life.
    const double end = rec.finish_s >= 0         ? rec.finish_s
                       : rec.token_times.empty() ? rec.arrival_s
                                                 : rec.token_times.back();
    const auto async = [&](const char* ph, double t) {
      return json{{"ph", ph}, {"cat", "request"}, {"id", id}, {"name", name}, {"pid", kRequestsPid},
                  {"tid", 0}, {"ts", t * kUs}};
    };
    json begin = async("b", rec.arrival_s);
    begin["args"] = {{"prompt_tokens", rec.request.prompt_tokens},
                     {"output_tokens", rec.request.output_tokens},
                     {"status", completed(rec) ? "completed" : "failed"},
                     {"error", rec.error}};
    events.push_back(std::move(begin));
    if (rec.first_token_s >= 0) {
      events.push_back({{"ph", "i"},
                        {"s", "t"},
                        {"cat", "request"},
                        {"name", name + " first token"},
                        {"pid", kRequestsPid},
                        {"tid", 0},
                        {"ts", rec.first_token_s * kUs}});
    }
    events.push_back(async("e", end));
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
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
