#include "engine/report/markdown.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/report/bottleneck.hpp"
#include "engine/report/expectations.hpp"
#include "engine/report/run_figures.hpp"

namespace engine {

namespace {

using nlohmann::ordered_json;

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

// Each fault as it was: when it was applied, what was detected, what was
// decided, and what it cost in one paragraph ("recovery time": from the
// fault until serving again, the one word every output uses).
void faults_section(std::string& out, const ordered_json& report) {
  const auto& f = report.at("faults");
  const auto& events = report.at("events");
  if (events.empty() && f.at("not_applied").get<int>() == 0) return;
  out += "\n## Faults and recovery\n\n";
  const int injected = f.at("injected").get<int>();
  out += fmt::format("{} fault{} applied", injected, injected == 1 ? "" : "s");
  if (injected > 0) {
    out += fmt::format("; detected after {}; recovery time {}", seconds_or_never(f.at("time_to_detect_s")),
                       recovery_time(f));
    out += fmt::format("; {} tokens recomputed", f.at("tokens_recomputed").get<long>());
  }
  if (const int late = f.at("not_applied").get<int>(); late > 0)
    out += fmt::format("; {} due after the run ended, not applied", late);
  out += ".\n";
  if (!f.at("before").is_null() && !f.at("after").is_null()) {
    const auto figure = [](const ordered_json& window, const char* key, double scale) {
      return window.at(key).is_null() ? std::string("-") : num(scale * window.at(key).get<double>());
    };
    out += "\n";
    table(out, {"serving", "from s", "to s", "decode tok/s", "ITL p50 ms", "TTFT p50 s"});
    for (const char* when : {"before", "after"}) {
      const auto& w = f.at(when);
      row(out, {std::string(when) + (std::string(when) == "before" ? " the fault" : " the recovery"), num(w.at("from_s")),
                num(w.at("to_s")), num(w.at("decode_tokens_per_s")), figure(w, "itl_p50_s", 1e3),
                figure(w, "ttft_p50_s", 1)});
    }
  }
  if (const auto& causes = f.at("failed_by_cause"); !causes.empty()) {
    out += "\nRequests failed, by cause:";
    for (const auto& [cause, n] : causes.items()) out += fmt::format(" {} ({})", cell(cause), n.get<int>());
    out += ".\n";
  }
  if (events.empty()) return;
  out += "\n";
  table(out, {"time s", "what", "target", "detail"});
  for (const auto& e : events)
    row(out, {num(e.at("t_s")), str(e.at("kind")), str(e.at("target")), cell(str(e.at("detail")))});
}

}  // namespace

std::string render_markdown(const ordered_json& report) {
  const auto& sc = report.at("scenario");
  const auto& sum = report.at("summary");
  const auto& build = report.at("build");
  std::string out = fmt::format("# meshinfer: {}\n\n", str(sc.at("name")));
  out += fmt::format("`{}` · {} {} · seed {} · {} plan · profile {} · {} level · meshinfer {} ({})\n\n",
                     str(sc.at("file")), str(sc.at("model")), str(sc.at("quant")),
                     sc.at("seed").get<unsigned long long>(), str(report.at("plan").at("strategy")),
                     str(sc.at("profile")), str(sc.at("simulation_level")), str(build.at("version")),
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
  row(out, {report.value("clock", "simulated") == "elapsed" ? "elapsed time (real processes)" : "simulated time",
            num(sum.at("simulated_s")) + " s"});
  if (report.contains("transport")) row(out, {"transport (real processes)", str(report.at("transport"))});
  row(out, {"uptime (could serve)",
            fmt::format("{} ({} s out of service)", pct(sum.at("uptime")), num(sum.at("out_of_service_s")))});
  row(out, {"request success", pct(sum.at("request_success"))});
  out += bottleneck_markdown(report.at("bottleneck"), sum.at("itl_s"));

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
  // A column for when cables were down, where one was.
  const auto& links = report.at("links");
  const bool any_down = std::any_of(links.begin(), links.end(), [](const auto& l) { return l.contains("down"); });
  std::vector<std::string> head{"link", "card", "a→b MB", "b→a MB", "utilization"};
  if (any_down) head.push_back("down");
  table(out, head);
  for (const auto& l : links) {
    std::vector<std::string> cells{link_label(str(l.at("a")), str(l.at("b"))), str(l.at("link")),
                                   mb(l.at("bytes_a_to_b")), mb(l.at("bytes_b_to_a")), pct(l.at("utilization"))};
    if (any_down) cells.push_back(downtime_text(l));
    row(out, cells);
  }

  faults_section(out, report);

  out += "\n## Expectations\n\n";
  const auto& expectations = report.at("expectations");
  if (expectations.empty()) return out + "None.\n";
  table(out, {"metric", "bound", "value", "result"});
  for (const auto& e : expectations) {
    row(out, {str(e.at("metric")), fmt::format("{} {}", op_symbol(str(e.at("op"))), num(e.at("bound"))),
              e.at("value").is_null() ? "not exercised" : num(e.at("value")), e.at("pass").get<bool>() ? "PASS" : "FAIL"});
  }
  return out;
}

}  // namespace engine
