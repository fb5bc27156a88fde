#include "engine/report/report_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/base/portable_math.hpp"
#include "engine/report/bottleneck.hpp"
#include "engine/report/run_figures.hpp"
#include "engine/report/svg.hpp"
#include "engine/report/term_bars_html.hpp"
#include "engine/report/timeline_html.hpp"

namespace engine {

namespace {

using namespace html;
using nlohmann::ordered_json;

// A report of real processes (meshinfer node) counts elapsed time, not simulated.
bool real_run(const ordered_json& report) { return report.value("clock", "simulated") == "elapsed"; }

void header(std::string& out, const ordered_json& report) {
  const auto& sc = report.at("scenario");
  const auto& build = report.at("build");
  put(out, "<header data-scenario=\"{}\" data-seed=\"{}\"><h1>{}</h1>", escape_markup(str(sc, "name")),
      sc.at("seed").get<unsigned long long>(), escape_markup(str(sc, "name")));
  if (const std::string d = str(sc, "description"); !d.empty()) put(out, "<p class=\"desc\">{}</p>", escape_markup(d));
  put(out,
      "<p class=\"meta\">{} · {} {} · {} plan ({} requested) · seed {} · profile {} · {} level · meshinfer {} ({})</p>"
      "</header>",
      escape_markup(str(sc, "file")), escape_markup(str(sc, "model")), escape_markup(str(sc, "quant")),
      escape_markup(str(report.at("plan"), "strategy")), escape_markup(str(sc, "parallelism")),
      sc.at("seed").get<unsigned long long>(), escape_markup(str(sc, "profile")),
      escape_markup(str(sc, "simulation_level")), escape_markup(str(build, "version")), escape_markup(str(build, "git")));
}

void tile(std::string& out, const char* key, const std::string& value, const char* unit, const std::string& what) {
  put(out,
      "<div class=\"tile\" data-key=\"{}\"><div class=\"v\">{} <small>{}</small></div><div class=\"k\">{}</div></div>",
      key, escape_markup(value), unit, escape_markup(what));
}

void summary_tiles(std::string& out, const ordered_json& report) {
  const auto& s = report.at("summary");
  const auto& ttft = s.at("ttft_s");
  const auto& itl = s.at("itl_s");
  const auto& req = s.at("requests");
  out += "<section class=\"tiles\" id=\"summary\">";
  tile(out, "decode", fixed(dbl(s, "decode_tokens_per_s"), 2), "tok/s", "decode throughput");
  tile(out, "prefill", fixed(dbl(s, "prefill_tokens_per_s"), 1), "tok/s", "prefill throughput");
  tile(out, "ttft", fixed(dbl(ttft, "p50"), 3) + " / " + fixed(dbl(ttft, "p99"), 3), "s", "TTFT p50 / p99");
  tile(out, "itl", fixed(1e3 * dbl(itl, "p50"), 2) + " / " + fixed(1e3 * dbl(itl, "p99"), 2), "ms",
       "inter-token p50 / p99");
  tile(out, "requests", fmt::format("{} / {}", req.at("completed").get<int>(), req.at("total").get<int>()), "",
       fmt::format("requests completed ({} failed)", req.at("failed").get<int>()));
  tile(out, "uptime", percent(dbl(s, "uptime")), "",
       fmt::format("uptime: could serve ({} s out of service)", fixed(dbl(s, "out_of_service_s"), 1)));
  tile(out, "request-success", percent(dbl(s, "request_success")), "", "request success: completed / total");
  tile(out, "simulated", fixed(dbl(s, "simulated_s"), 2), "s",
       real_run(report) ? "elapsed time (real processes)" : "simulated time");
  if (s.contains("recovery_s")) tile(out, "recovery", fixed(dbl(s, "recovery_s"), 3), "s", "recovery time");
  out += "</section>";
}

const ordered_json* shard_of(const ordered_json& plan, const std::string& node) {
  for (const auto& sh : plan.at("nodes"))
    if (str(sh, "node") == node) return &sh;
  return nullptr;
}

// What became of each node, from the events: "crashed at 1.00 s", "hung at ...",
// "left out at ..." (alive but not in the last re-placement: cut off). Absent: it served throughout.
std::map<std::string, std::string> node_fates(const ordered_json& report) {
  std::map<std::string, std::string> out;
  for (const auto& e : optional_list(report, "events")) {
    const std::string kind = str(e, "kind");
    if (kind == "node-crash" || kind == "node-hang")
      out.emplace(optional_str(e, "target"),
                  fmt::format("{} at {:.2f} s", kind == "node-crash" ? "crashed" : "hung", dbl(e, "t_s")));
  }
  const auto& placements = optional_list(report, "placements");
  if (!placements.empty())
    for (const auto& n : report.at("nodes"))
      if (!shard_of(placements.back().at("plan"), str(n, "name")))
        out.emplace(str(n, "name"), fmt::format("left out at {:.2f} s", dbl(placements.back(), "t_s")));
  return out;
}

using Point = std::pair<double, double>;

// Where a cable's label goes: its midpoint, else the first point along it that
// keeps clear of the labels placed so far (the diagonals of a square cross).
Point label_spot(Point a, Point b, std::vector<Point>& placed) {
  Point spot;
  for (double t : {0.5, 0.38, 0.62, 0.28, 0.72}) {
    spot = {a.first + t * (b.first - a.first), a.second + t * (b.second - a.second)};
    const bool clear = std::none_of(placed.begin(), placed.end(), [&](const Point& p) {
      return std::abs(p.first - spot.first) < 100 && std::abs(p.second - spot.second) < 16;
    });
    if (clear) break;
  }
  placed.push_back(spot);
  return spot;
}

// Nodes on an ellipse (a full mesh has no better layout), cables between them;
// each node's share of `plan`, or what became of it.
void cluster(std::string& out, const ordered_json& report, const ordered_json& plan, const char* id,
             const std::string& title) {
  const auto fates = node_fates(report);
  const auto& nodes = report.at("nodes");
  const int n = static_cast<int>(nodes.size());
  const double kW = 640, kH = 430, box_w = n > 6 ? 130 : 176, kBoxH = 74;
  std::map<std::string, Point> pos;
  for (int i = 0; i < n; ++i) {
    const double a = (-90 - 180.0 / n + 360.0 * i / n) * std::numbers::pi / 180;
    const double r = n == 1 ? 0 : 1;
    pos[str(nodes[i], "name")] = {kW / 2 + r * 225 * portable::cos(a), kH / 2 + r * 165 * portable::sin(a)};
  }
  figure(out, id, title, kW, kH, {{"mem-weights", "weights"}, {"mem-free", "free memory"}}, [&] {
    std::map<std::pair<std::string, std::string>, int> seen;  // parallel cables fan out
    std::vector<Point> labels;
    for (const auto& l : report.at("links")) {
      const std::string a = str(l, "a"), b = str(l, "b");
      const auto [ax, ay] = pos[a];
      const auto [bx, by] = pos[b];
      const double len = std::max(1.0, std::sqrt((bx - ax) * (bx - ax) + (by - ay) * (by - ay)));
      const double off = 10.0 * seen[{a, b}]++;
      const double ox = -(by - ay) / len * off, oy = (bx - ax) / len * off;
      // A cable that went down says when; drawn down if it still was at the end.
      const std::string down = downtime_text(l);
      const char* state = down.empty() ? "" : l.at("down").back().at("to_s").is_null() ? "down" : "restored";
      put(out,
          "<g class=\"cable\"><line class=\"cable\" data-a=\"{}\" data-b=\"{}\" data-link=\"{}\" "
          "data-utilization=\"{}\"{} x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>",
          escape_markup(a), escape_markup(b), escape_markup(str(l, "link")), num(dbl(l, "utilization")),
          down.empty() ? "" : fmt::format(" data-state=\"{}\" data-down=\"{}\"", state, escape_markup(down)), ax + ox,
          ay + oy, bx + ox, by + oy);
      const auto [lx, ly] = label_spot({ax + ox, ay + oy}, {bx + ox, by + oy}, labels);
      const std::string label = str(l, "link") + " · " + percent(dbl(l, "utilization"));
      // About half the text's width at 11 px; when it went down, a second line says so.
      const double half = 3.2 * std::max(label.size(), down.size()) + 4;
      rect(out, "label-bg", lx - half, ly - 8, 2 * half, down.empty() ? 16 : 29);
      text(out, "cable-label", lx, ly + 4, label, "middle");
      if (!down.empty()) text(out, "cable-label down", lx, ly + 17, down, "middle");
      out += "</g>";
    }
    for (const auto& node : nodes) {
      const std::string name = str(node, "name");
      const auto [cx, cy] = pos[name];
      const double x = cx - box_w / 2, y = cy - kBoxH / 2;
      put(out, "<g class=\"node\" data-node=\"{}\" data-hardware=\"{}\">", escape_markup(name),
          escape_markup(str(node, "hardware")));
      const auto fate = fates.find(name);
      const bool failed = !node.at("error").get<std::string>().empty() || fate != fates.end();
      rect(out, failed ? "node-box failed" : "node-box", x, y, box_w, kBoxH,
           fate == fates.end() ? "" : fmt::format(" data-fate=\"{}\"", escape_markup(fate->second)));
      text(out, "node-name", x + 8, y + 17, name);
      text(out, "node-hw", x + 8, y + 31, str(node, "hardware") + " · " + percent(dbl(node, "utilization")) + " busy");
      if (const auto* sh = shard_of(plan, name)) {
        const double used = dbl(*sh, "weight_gb"), total = dbl(*sh, "memory_gb");
        const double bar = box_w - 16, filled = total > 0 ? bar * std::min(1.0, used / total) : 0;
        rect(out, "mem-free", x + 8, y + 40, bar, 10);
        rect(out, "mem-weights", x + 8, y + 40, filled, 10,
             fmt::format(" data-weight-gb=\"{}\" data-memory-gb=\"{}\"", num(used), num(total)));
        text(out, "node-hw", x + 8, y + 65,
             fate == fates.end() ? fmt::format("weights {:.0f} of {:.0f} GB", used, total) : fate->second);
      } else {
        text(out, "node-hw", x + 8, y + 52, (fate == fates.end() ? "" : fate->second + " · ") + "holds nothing");
      }
      out += "</g>";
    }
  });
}

// A histogram from report.distributions, in `unit` = `factor` x seconds, with p50 and p99 marked.
void histogram(std::string& out, const ordered_json& report, const char* key, const char* id, const std::string& title,
               const char* unit, double factor) {
  constexpr double kW = 650, kL = 80, kR = 630, kTop = 24, kBottom = 190;
  const auto& h = report.at("distributions").at(key);
  const auto& counts = h.at("counts");
  const double start = factor * dbl(h, "start"), width = factor * dbl(h, "width");
  double peak = 0;
  for (const auto& c : counts) peak = std::max(peak, c.get<double>());
  // An empty bin of margin each side: a lone bin reads as a bar, not as the whole plot.
  const Scale x{std::max(0.0, start - width), start + width * (counts.size() + 1), kL, kR};
  const Scale y{0, nice_ceiling(peak), kBottom, kTop};
  figure(out, id, title, kW, kBottom + 44, {{"bin", "count"}, {"percentile", "p50, p99"}}, [&] {
    if (counts.empty()) text(out, "empty", (kL + kR) / 2, (kTop + kBottom) / 2, "no values in this run", "middle");
    for (std::size_t i = 0; i < counts.size(); ++i) {
      const double lo = start + i * width, c = counts[i].get<double>();
      rect(out, "bin", x(lo) + 0.5, y(c), x(lo + width) - x(lo) - 1, kBottom - y(c),
           fmt::format(" data-lo=\"{}\" data-count=\"{}\"", num(lo), num(c)));
    }
    if (!counts.empty()) {
      const auto& d = report.at("summary").at(key);
      double label_y = kTop + 8;
      for (const char* p : {"p50", "p99"}) {
        const double v = factor * dbl(d, p);
        put(out,
            "<line class=\"percentile\" data-p=\"{0}\" data-value=\"{1}\" x1=\"{2:.1f}\" y1=\"{3:.1f}\" "
            "x2=\"{2:.1f}\" y2=\"{4:.1f}\"></line>",
            p, num(v), x(v), kTop, kBottom);
        text(out, "marker-label", x(v) + 3, label_y, fmt::format("{} {:.3g}", p, v));
        label_y += 12;
      }
    }
    axis(out, y, Side::kLeft, kL, "count");
    axis(out, x, Side::kBottom, kBottom, unit);
  });
}

// Where a decode token's time goes on each node, and what each added node buys.
void bottleneck(std::string& out, const ordered_json& report) {
  if (!report.contains("bottleneck")) return;
  const auto& b = report.at("bottleneck");
  out += "<section id=\"bottleneck\"><h2>Where a token's time goes</h2>";
  if (b.at("decode").is_null() && b.at("prefill").is_null()) out += "<p class=\"muted\">No step ran.</p>";
  for (const char* kind : {"decode", "prefill"}) {
    const auto& k = b.at(kind);
    if (k.is_null()) continue;
    put(out, "<p class=\"{}\">One {} on {}: {}.</p>", kind,
        std::string(kind) == "decode" ? "decode token" : fmt::format("prefill step ({:.0f} tokens)", dbl(k, "tokens")),
        escape_markup(str(k, "node")), escape_markup(terms_line(k)));
  }
  if (!b.at("decode").is_null()) {
    TermRows rows;
    for (const auto& n : b.at("decode").at("nodes")) rows.emplace_back(str(n, "node"), &n);
    term_bars(out, "decode-token", "One decode token on each node, by what it waits for (ms)", rows);
  }
  out += "<p class=\"muted\">Compute is split by the cost model's roofline terms of the same kernels; communication "
         "in proportion to what the link card charges the step's messages (latency per message, bytes over "
         "bandwidth, a detour's second hop); waiting is the rest of the step's interval. Each bar is its node's "
         "median step, as the ITL p50 is.</p>";
  if (b.contains("scaling")) scaling_chart(out, b.at("scaling"));
  out += "</section>";
}

// Serving before the first fault and after the recovery, side by side.
void before_after(std::string& out, const ordered_json& report) {
  if (!report.contains("faults")) return;
  const auto& faults = report.at("faults");
  if (faults.value("before", ordered_json()).is_null() || faults.value("after", ordered_json()).is_null()) return;
  const auto figure = [](const ordered_json& w, const char* key, double scale, int digits) {
    return w.at(key).is_null() ? std::string("-") : fixed(scale * dbl(w, key), digits);
  };
  out += "<table id=\"before-after\"><tr><th>serving</th><th>from (s)</th><th>to (s)</th><th>decode tok/s</th>"
         "<th>ITL p50 (ms)</th><th>TTFT p50 (s)</th></tr>";
  for (const char* when : {"before", "after"}) {
    const auto& w = faults.at(when);
    put(out, "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", when,
        std::string(when) == "before" ? "before the fault" : "after the recovery", fixed(dbl(w, "from_s"), 3),
        fixed(dbl(w, "to_s"), 3), fixed(dbl(w, "decode_tokens_per_s"), 2), figure(w, "itl_p50_s", 1e3, 2),
        figure(w, "ttft_p50_s", 1, 3));
  }
  out += "</table>";
}

void events_table(std::string& out, const ordered_json& report) {
  const auto& events = optional_list(report, "events");
  const auto& phases = optional_list(report, "phases");
  if (events.empty() && phases.empty()) return;
  out +=
      "<section><h2>Faults and recovery</h2><table id=\"events\"><tr><th>time (s)</th><th>what</th>"
      "<th>target</th><th>detail / until</th></tr>";
  for (const auto& e : events)
    put(out, "<tr class=\"event\"><td>{:.3f}</td><td>{}</td><td>{}</td><td>{}</td></tr>", dbl(e, "t_s"),
        escape_markup(str(e, "kind")), escape_markup(optional_str(e, "target")),
        escape_markup(optional_str(e, "detail")));
  for (const auto& p : phases)
    put(out, "<tr class=\"phase-row\"><td>{:.3f}</td><td>phase: {}</td><td>{}</td><td>{}</td></tr>", dbl(p, "start_s"),
        escape_markup(str(p, "kind")), escape_markup(optional_str(p, "target")),
        p.at("end_s").is_null() ? "end of run" : fmt::format("{:.3f} s", dbl(p, "end_s")));
  out += "</table>";
  before_after(out, report);
  out += "</section>";
}

const char* op_symbol(const std::string& op) { return op == "min" ? "≥" : op == "max" ? "≤" : "="; }

void expectations(std::string& out, const ordered_json& report) {
  const auto& ex = report.at("expectations");
  out += "<section><h2>Expectations</h2>";
  if (ex.empty()) {
    out += "<p class=\"muted\">This scenario states no expectations.</p></section>";
    return;
  }
  out += "<table id=\"expectations\"><tr><th>metric</th><th>bound</th><th>value</th><th>result</th></tr>";
  for (const auto& e : ex) {
    const bool pass = e.at("pass").get<bool>();
    put(out,
        "<tr class=\"expectation\" data-metric=\"{0}\" data-pass=\"{1}\"><td>{0}</td><td>{2} {3:g}</td>"
        "<td>{4}</td><td><span class=\"badge {5}\">{6}</span></td></tr>",
        escape_markup(str(e, "metric")), pass ? "true" : "false", op_symbol(str(e, "op")), dbl(e, "bound"),
        e.at("value").is_null() ? "not exercised" : fmt::format("{:g}", dbl(e, "value")), pass ? "pass" : "fail",
        pass ? "PASS" : "FAIL");
  }
  out += "</table></section>";
}

}  // namespace

std::string render_html(const ordered_json& report) {
  std::string out;
  page_head(out, "meshinfer: " + str(report.at("scenario"), "name"));
  header(out, report);
  out += "<div class=\"top\">";
  summary_tiles(out, report);
  cluster(out, report, report.at("plan"), "cluster",
          "Cluster: nodes with their memory, cables with their link card and utilization");
  if (const auto& placements = optional_list(report, "placements"); !placements.empty()) {
    const auto& p = placements.back();  // the placement the run ended on
    cluster(out, report, p.at("plan"), "cluster-after",
            fmt::format("Cluster after the re-placement at {:.2f} s: {} plan on the survivors", dbl(p, "t_s"),
                        str(p.at("plan"), "strategy")));
  }
  out += "</div>";
  timeline_chart(out, report);
  throughput_chart(out, report);
  out += "<div class=\"pair\">";
  histogram(out, report, "ttft_s", "ttft", "Time to first token (completed requests)", "TTFT (s)", 1);
  histogram(out, report, "itl_s", "itl", "Inter-token latency (every gap between two tokens)",
            "inter-token latency (ms)", 1e3);
  out += "</div>";
  bottleneck(out, report);
  events_table(out, report);
  expectations(out, report);
  put(out, "<footer>Drawn by meshinfer from report.json ({}); every figure is {}.</footer></body></html>\n",
      escape_markup(str(report, "schema")),
      real_run(report) ? "measured on real processes over " + escape_markup(str(report, "transport")) +
                             ", in elapsed time"
                       : std::string("simulated time"));
  return out;
}

}  // namespace engine
