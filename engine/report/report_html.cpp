#include "engine/report/report_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <numbers>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/report/report.hpp"

namespace engine {

namespace {

using nlohmann::ordered_json;
using Legend = std::vector<std::pair<std::string, std::string>>;  // (class, label)

// Every chart spans the page width in viewBox units; CSS scales it to the window.
constexpr double kPageW = 1320;
// Time charts share one x range, so a moment lines up across them, and one
// top band: event labels in two rows, then phase labels, then the plot.
constexpr double kPlotL = 190, kPlotR = 1300;
constexpr double kEventLabelY = 11, kPhaseTop = 26, kPhaseLabelY = 37, kPlotTop = 42;

template <typename... Args>
void put(std::string& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

std::string esc(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// data-* values: the shortest text that reads back as the same number.
std::string num(double v) { return fmt::format("{}", v); }
double dbl(const ordered_json& j, const char* key) { return j.at(key).get<double>(); }
std::string str(const ordered_json& j, const char* key) { return j.at(key).get<std::string>(); }
std::string optional_str(const ordered_json& j, const char* key) {
  return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : "";
}
// A list the report may lack: events and phases exist only in fault runs.
const ordered_json& list(const ordered_json& report, const char* key) {
  static const ordered_json empty = ordered_json::array();
  return report.contains(key) ? report.at(key) : empty;
}

double nice_ceiling(double v) {
  if (v <= 0) return 1;
  const double step = nice_step(v / 5);
  return std::ceil(v / step - 1e-9) * step;
}

struct Scale {
  double d0, d1, r0, r1;  // domain [d0, d1] onto range [r0, r1]
  double operator()(double v) const { return d1 > d0 ? r0 + (v - d0) / (d1 - d0) * (r1 - r0) : r0; }
};

Scale time_scale(const ordered_json& report) {
  const auto& tl = report.at("timeline");
  return {0, dbl(tl, "bucket_s") * tl.at("buckets").get<int>(), kPlotL, kPlotR};
}

// --- SVG pieces ------------------------------------------------------------------

enum class Side { kBottom, kLeft };

// Baseline, ticks at 1/2/5 steps over the domain, and the title (with its unit).
void axis(std::string& out, const Scale& s, Side side, double at, const std::string& title) {
  const bool bottom = side == Side::kBottom;
  put(out, "<g class=\"axis\">");
  if (bottom)
    put(out, "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>", s.r0, at, s.r1, at);
  else
    put(out, "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>", at, s.r0, at, s.r1);
  if (s.d1 > s.d0) {
    const double step = nice_step((s.d1 - s.d0) / 6);
    for (long k = std::lround(std::ceil(s.d0 / step)); k * step <= s.d1 * (1 + 1e-9); ++k) {
      const double p = s(k * step);
      const std::string label = fmt::format("{:g}", k * step);
      if (bottom)
        put(out,
            "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"></line>"
            "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>",
            p, at, at + 4, at + 16, label);
      else
        put(out,
            "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\"></line>"
            "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>",
            at - 4, p, at, at - 7, p + 4, label);
    }
  }
  const double mid = (s.r0 + s.r1) / 2;
  if (bottom)
    put(out, "<text class=\"axis-title\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", mid, at + 34,
        esc(title));
  else
    put(out,
        "<text class=\"axis-title\" transform=\"translate({:.1f} {:.1f}) rotate(-90)\" "
        "text-anchor=\"middle\">{}</text>",
        at - 52, mid, esc(title));
  out += "</g>";
}

// Edges rounded before the size is taken: neighbours share an edge exactly and
// crisp rendering leaves no hairline between them.
void rect(std::string& out, std::string_view cls, double x, double y, double w, double h,
          const std::string& data = "") {
  const auto tenth = [](double v) { return std::round(v * 10) / 10; };
  const double x0 = tenth(x), y0 = tenth(y), x1 = tenth(x + w), y1 = tenth(y + h);
  if (x1 <= x0 || y1 <= y0) return;
  put(out, "<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"{}></rect>", cls, x0, y0,
      x1 - x0, y1 - y0, data);
}

void text(std::string& out, std::string_view cls, double x, double y, const std::string& content,
          std::string_view anchor = "start") {
  put(out, "<text class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">{}</text>", cls, x, y, anchor,
      esc(content));
}

void legend(std::string& out, const Legend& items) {
  if (items.empty()) return;
  out += "<div class=\"legend\">";
  for (const auto& [cls, label] : items)
    put(out,
        "<span><svg class=\"swatch\" viewBox=\"0 0 12 12\"><rect class=\"key {}\" width=\"12\" "
        "height=\"12\"></rect></svg>{}</span>",
        cls, esc(label));
  out += "</div>";
}

// A chart: caption, an SVG of `height` viewBox units drawn by `body`, a legend.
template <typename Body>
void figure(std::string& out, const char* id, const std::string& title, double width, double height,
            const Legend& items, Body body) {
  put(out,
      "<figure class=\"chart\" id=\"{0}\"><figcaption>{1}</figcaption>"
      "<svg viewBox=\"0 0 {2} {3}\" role=\"img\" aria-label=\"{1}\">",
      id, esc(title), width, height);
  body();
  out += "</svg>";
  legend(out, items);
  out += "</figure>";
}

// One row of the timeline: its label left of the plot, its band across it.
template <typename Body>
void lane(std::string& out, const std::string& data, double y, double h, const std::string& label,
          const std::string& detail, Body body) {
  put(out,
      "<g class=\"lane\" {}><text class=\"lane-label\" x=\"8\" y=\"{:.1f}\">{} <tspan "
      "class=\"muted\">{}</tspan></text>",
      data, y + h / 2 + 4, esc(label), esc(detail));
  rect(out, "lane-bg", kPlotL, y, kPlotR - kPlotL, h);
  body();
  out += "</g>";
}

// Recovery phases as translucent bands over a chart of time, down to `bottom`.
void phase_bands(std::string& out, const ordered_json& report, const Scale& x, double bottom) {
  for (const auto& p : list(report, "phases")) {
    const double start = dbl(p, "start_s");
    const double end = p.at("end_s").is_null() ? x.d1 : dbl(p, "end_s");
    rect(out, "phase", x(start), kPhaseTop, std::max(1.0, x(end) - x(start)), bottom - kPhaseTop,
         fmt::format(" data-kind=\"{}\" data-target=\"{}\" data-start=\"{}\" data-end=\"{}\"", esc(str(p, "kind")),
                     esc(optional_str(p, "target")), num(start), num(end)));
    text(out, "phase-label", x(start) + 3, kPhaseLabelY, str(p, "kind"));
  }
}

// Fault events as vertical lines down to `bottom`, labelled in alternating rows
// so that neighbours do not collide.
void fault_markers(std::string& out, const ordered_json& report, const Scale& x, double bottom) {
  int i = 0;
  for (const auto& e : list(report, "events")) {
    const double t = dbl(e, "t_s");
    const std::string target = optional_str(e, "target");
    put(out,
        "<line class=\"fault-marker\" data-t=\"{0}\" data-kind=\"{1}\" data-target=\"{2}\" x1=\"{3:.1f}\" "
        "y1=\"{4:.1f}\" x2=\"{3:.1f}\" y2=\"{5:.1f}\"><title>{6}</title></line>",
        num(t), esc(str(e, "kind")), esc(target), x(t), kPhaseTop, bottom,
        esc(fmt::format("{:g} s: {} {} {}", t, str(e, "kind"), target, optional_str(e, "detail"))));
    text(out, "marker-label", x(t) + 3, kEventLabelY + 11 * (i++ % 2),
         target.empty() ? str(e, "kind") : str(e, "kind") + " " + target);
  }
}

// --- Page parts ------------------------------------------------------------------

std::string fixed(double v, int digits) { return fmt::format("{:.{}f}", v, digits); }
std::string percent(double fraction) { return fixed(100 * fraction, fraction < 0.1 ? 2 : 1) + "%"; }

void header(std::string& out, const ordered_json& report) {
  const auto& sc = report.at("scenario");
  const auto& build = report.at("build");
  put(out, "<header data-scenario=\"{}\" data-seed=\"{}\"><h1>{}</h1>", esc(str(sc, "name")),
      sc.at("seed").get<unsigned long long>(), esc(str(sc, "name")));
  if (const std::string d = str(sc, "description"); !d.empty()) put(out, "<p class=\"desc\">{}</p>", esc(d));
  put(out,
      "<p class=\"meta\">{} · {} {} · {} plan ({} requested) · seed {} · profile {} · meshinfer {} ({})</p></header>",
      esc(str(sc, "file")), esc(str(sc, "model")), esc(str(sc, "quant")), esc(str(report.at("plan"), "strategy")),
      esc(str(sc, "parallelism")), sc.at("seed").get<unsigned long long>(), esc(str(sc, "profile")),
      esc(str(build, "version")), esc(str(build, "git")));
}

void tile(std::string& out, const char* key, const std::string& value, const char* unit, const std::string& what) {
  put(out,
      "<div class=\"tile\" data-key=\"{}\"><div class=\"v\">{} <small>{}</small></div><div class=\"k\">{}</div></div>",
      key, esc(value), unit, esc(what));
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
  tile(out, "availability", percent(dbl(s, "availability")), "", "availability");
  tile(out, "simulated", fixed(dbl(s, "simulated_s"), 2), "s", "simulated time");
  if (s.contains("recovery_s")) tile(out, "recovery", fixed(dbl(s, "recovery_s"), 3), "s", "recovery time");
  out += "</section>";
}

const ordered_json* shard_of(const ordered_json& report, const std::string& node) {
  for (const auto& sh : report.at("plan").at("nodes"))
    if (str(sh, "node") == node) return &sh;
  return nullptr;
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

// Nodes on an ellipse (a full mesh has no better layout), cables between them.
void cluster(std::string& out, const ordered_json& report) {
  const auto& nodes = report.at("nodes");
  const int n = static_cast<int>(nodes.size());
  const double kW = 640, kH = 430, box_w = n > 6 ? 130 : 176, kBoxH = 74;
  std::map<std::string, Point> pos;
  for (int i = 0; i < n; ++i) {
    const double a = (-90 - 180.0 / n + 360.0 * i / n) * std::numbers::pi / 180;
    const double r = n == 1 ? 0 : 1;
    pos[str(nodes[i], "name")] = {kW / 2 + r * 225 * std::cos(a), kH / 2 + r * 165 * std::sin(a)};
  }
  figure(
      out, "cluster", "Cluster: nodes with their memory, cables with their link card and utilization", kW, kH,
      {{"mem-weights", "weights"}, {"mem-free", "free memory"}}, [&] {
        std::map<std::pair<std::string, std::string>, int> seen;  // parallel cables fan out
        std::vector<Point> labels;
        for (const auto& l : report.at("links")) {
          const std::string a = str(l, "a"), b = str(l, "b");
          const auto [ax, ay] = pos[a];
          const auto [bx, by] = pos[b];
          const double len = std::max(1.0, std::hypot(bx - ax, by - ay));
          const double off = 10.0 * seen[{a, b}]++;
          const double ox = -(by - ay) / len * off, oy = (bx - ax) / len * off;
          put(out,
              "<g class=\"cable\"><line class=\"cable\" data-a=\"{}\" data-b=\"{}\" data-link=\"{}\" "
              "data-utilization=\"{}\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>",
              esc(a), esc(b), esc(str(l, "link")), num(dbl(l, "utilization")), ax + ox, ay + oy, bx + ox, by + oy);
          const auto [lx, ly] = label_spot({ax + ox, ay + oy}, {bx + ox, by + oy}, labels);
          const std::string label = str(l, "link") + " · " + percent(dbl(l, "utilization"));
          const double half = 3.2 * label.size() + 4;  // about half the text's width at 11 px
          rect(out, "label-bg", lx - half, ly - 8, 2 * half, 16);
          text(out, "cable-label", lx, ly + 4, label, "middle");
          out += "</g>";
        }
        for (const auto& node : nodes) {
          const std::string name = str(node, "name");
          const auto [cx, cy] = pos[name];
          const double x = cx - box_w / 2, y = cy - kBoxH / 2;
          put(out, "<g class=\"node\" data-node=\"{}\" data-hardware=\"{}\">", esc(name), esc(str(node, "hardware")));
          rect(out, node.at("error").get<std::string>().empty() ? "node-box" : "node-box failed", x, y, box_w, kBoxH);
          text(out, "node-name", x + 8, y + 17, name);
          text(out, "node-hw", x + 8, y + 31,
               str(node, "hardware") + " · " + percent(dbl(node, "utilization")) + " busy");
          if (const auto* sh = shard_of(report, name)) {
            const double used = dbl(*sh, "weight_gb"), total = dbl(*sh, "memory_gb");
            const double bar = box_w - 16, filled = total > 0 ? bar * std::min(1.0, used / total) : 0;
            rect(out, "mem-free", x + 8, y + 40, bar, 10);
            rect(out, "mem-weights", x + 8, y + 40, filled, 10,
                 fmt::format(" data-weight-gb=\"{}\" data-memory-gb=\"{}\"", num(used), num(total)));
            text(out, "node-hw", x + 8, y + 65, fmt::format("weights {:.0f} of {:.0f} GB", used, total));
          }
          out += "</g>";
        }
      });
}

// Requests packed into rows so spans do not overlap (up to kMaxRows; beyond, rows are shared).
std::vector<int> request_rows(const ordered_json& requests, int& rows) {
  constexpr int kMaxRows = 24;
  std::vector<double> row_end;
  std::vector<int> row_of;
  for (const auto& rq : requests) {
    if (rq.at("arrival_s").is_null()) {
      row_of.push_back(-1);
      continue;
    }
    const double start = dbl(rq, "arrival_s");
    double end = start;
    for (const char* k : {"first_token_s", "finish_s"})
      if (!rq.at(k).is_null()) end = dbl(rq, k);
    auto free = std::find_if(row_end.begin(), row_end.end(), [&](double e) { return e <= start; });
    if (free == row_end.end() && row_end.size() < kMaxRows) free = row_end.insert(row_end.end(), start);
    if (free == row_end.end()) free = std::min_element(row_end.begin(), row_end.end());
    *free = end;
    row_of.push_back(static_cast<int>(free - row_end.begin()));
  }
  rows = static_cast<int>(row_end.size());
  return row_of;
}

void request_span(std::string& out, const ordered_json& rq, const Scale& x, double y, double h) {
  const double arrival = dbl(rq, "arrival_s");
  const bool ok = str(rq, "status") == "completed";
  const auto time = [&](const char* k) { return rq.at(k).is_null() ? -1.0 : dbl(rq, k); };
  const double first = time("first_token_s"), finish = time("finish_s");
  put(out,
      "<g class=\"request\" data-id=\"{}\" data-status=\"{}\" data-arrival=\"{}\" data-first-token=\"{}\" "
      "data-finish=\"{}\"><title>{}</title>",
      rq.at("id").get<int>(), ok ? "completed" : "failed", num(arrival), first < 0 ? "" : num(first),
      finish < 0 ? "" : num(finish),
      esc(fmt::format("request {}: {} prompt + {} output tokens, {}{}", rq.at("id").get<int>(),
                      rq.at("prompt_tokens").get<int>(), rq.at("output_tokens").get<int>(), str(rq, "status"),
                      ok ? "" : ": " + str(rq, "error"))));
  const double waited_to = first >= 0 ? first : arrival;
  rect(out, ok ? "req-wait" : "req-wait failed", x(arrival), y, std::max(1.0, x(waited_to) - x(arrival)), h);
  if (first >= 0)
    rect(out, ok ? "req-decode" : "req-decode failed", x(first), y,
         std::max(1.0, x(finish >= 0 ? finish : first) - x(first)), h);
  out += "</g>";
}

double peak_link_utilization(const ordered_json& tl) {
  double peak = 0;
  const double bucket_s = dbl(tl, "bucket_s");
  for (const auto& l : tl.at("links")) {
    const double capacity = dbl(l, "bandwidth_bytes_per_s") * bucket_s;
    for (std::size_t i = 0; i < l.at("bytes_a_to_b").size(); ++i) {
      const double bytes = std::max(l.at("bytes_a_to_b")[i].get<double>(), l.at("bytes_b_to_a")[i].get<double>());
      if (capacity > 0) peak = std::max(peak, bytes / capacity);
    }
  }
  return peak;
}

void timeline(std::string& out, const ordered_json& report) {
  constexpr double kTop = kPlotTop, kNodeH = 34, kLinkH = 18, kGap = 5, kHeadH = 20, kRowH = 8;
  const auto& tl = report.at("timeline");
  const auto& nodes = tl.at("nodes");
  const auto& links = tl.at("links");
  const double bucket_s = dbl(tl, "bucket_s");
  const Scale x = time_scale(report);
  int rows = 0;
  const auto row_of = request_rows(report.at("requests"), rows);
  const double links_top = kTop + nodes.size() * (kNodeH + kGap) + kHeadH;
  const double requests_top = links_top + links.size() * (kLinkH + kGap) + kHeadH;
  const double bottom = requests_top + std::max(rows, 1) * (kRowH + 2) + 4;
  const double link_scale = nice_ceiling(peak_link_utilization(tl));

  Legend items = {{"compute", "compute"},
                  {"comm", "communication (incl. waiting for peers)"},
                  {"idle", "idle"},
                  {"link-util", "link: busier direction, share of bandwidth"},
                  {"req-wait", "request: queued + prefill"},
                  {"req-decode", "request: decoding"}};
  if (!list(report, "events").empty()) items.push_back({"fault-swatch", "fault / event"});
  if (!list(report, "phases").empty()) items.push_back({"phase", "recovery phase"});
  figure(out, "timeline", "Timeline: what each node and link did over simulated time", kPageW, bottom + 44, items, [&] {
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      const auto& node = nodes[n];
      const auto& totals = report.at("nodes")[n];
      const double y = kTop + n * (kNodeH + kGap);
      lane(
          out,
          fmt::format("data-kind=\"node\" data-node=\"{}\" data-compute-s=\"{}\" data-comm-s=\"{}\" data-idle-s=\"{}\"",
                      esc(str(node, "name")), num(dbl(totals, "compute_s")), num(dbl(totals, "comm_s")),
                      num(dbl(totals, "idle_s"))),
          y, kNodeH, str(node, "name"), percent(dbl(totals, "utilization")) + " compute", [&] {
            for (std::size_t i = 0; i < node.at("compute_s").size(); ++i) {
              const double x0 = x(i * bucket_s), w = x((i + 1) * bucket_s) - x0;
              double base = y + kNodeH;
              for (const char* part : {"compute", "comm", "idle"}) {
                const double h =
                    bucket_s > 0 ? kNodeH * node.at(std::string(part) + "_s")[i].get<double>() / bucket_s : 0;
                rect(out, part, x0, base - h, w, h);
                base -= h;
              }
            }
          });
    }
    text(out, "group-label", 8, links_top - 7,
         fmt::format("links: busier direction per bucket, lane height = {:g}% of bandwidth", 100 * link_scale));
    for (std::size_t k = 0; k < links.size(); ++k) {
      const auto& l = links[k];
      const std::string a = str(l, "a"), b = str(l, "b");
      const double y = links_top + k * (kLinkH + kGap);
      const double capacity = dbl(l, "bandwidth_bytes_per_s") * bucket_s;
      const double whole_run = dbl(report.at("links")[k], "utilization");
      lane(out,
           fmt::format("data-kind=\"link\" data-link=\"{}-{}\" data-card=\"{}\" data-utilization=\"{}\"", esc(a),
                       esc(b), esc(str(l, "link")), num(whole_run)),
           y, kLinkH, a + "–" + b, str(l, "link") + " · " + percent(whole_run), [&] {
             for (std::size_t i = 0; i < l.at("bytes_a_to_b").size(); ++i) {
               const double bytes =
                   std::max(l.at("bytes_a_to_b")[i].get<double>(), l.at("bytes_b_to_a")[i].get<double>());
               const double h = capacity > 0 ? kLinkH * std::min(1.0, bytes / capacity / link_scale) : 0;
               const double x0 = x(i * bucket_s);
               rect(out, "link-util", x0, y + kLinkH - h, x((i + 1) * bucket_s) - x0, h);
             }
           });
    }
    text(out, "group-label", 8, requests_top - 7, fmt::format("requests ({})", report.at("requests").size()));
    out += "<g class=\"requests\">";
    for (std::size_t i = 0; i < row_of.size(); ++i)
      if (row_of[i] >= 0) request_span(out, report.at("requests")[i], x, requests_top + row_of[i] * (kRowH + 2), kRowH);
    out += "</g>";
    phase_bands(out, report, x, bottom);  // translucent, over the lanes they tint
    fault_markers(out, report, x, bottom);
    axis(out, x, Side::kBottom, bottom, "simulated time (s)");
  });
}

void throughput(std::string& out, const ordered_json& report) {
  constexpr double kTop = kPlotTop, kBottom = 210;
  const auto& tl = report.at("timeline");
  const double bucket_s = dbl(tl, "bucket_s");
  const auto& tokens = tl.at("tokens");
  double peak = 0;
  for (const auto& t : tokens) peak = std::max(peak, t.get<double>());
  const Scale x = time_scale(report);
  const Scale y{0, nice_ceiling(bucket_s > 0 ? peak / bucket_s : 0), kBottom, kTop};
  figure(out, "throughput", fmt::format("Throughput: output tokens per second, in {:.3g} s buckets", bucket_s), kPageW,
         kBottom + 44, {{"tokens", "output tokens/s"}}, [&] {
           for (std::size_t i = 0; i < tokens.size(); ++i) {
             const double rate = bucket_s > 0 ? tokens[i].get<double>() / bucket_s : 0;
             const double x0 = x(i * bucket_s);
             rect(out, "tokens column", x0, y(rate), x((i + 1) * bucket_s) - x0, kBottom - y(rate),
                  fmt::format(" data-t=\"{}\" data-tokens-per-s=\"{}\"", num(i * bucket_s), num(rate)));
           }
           phase_bands(out, report, x, kBottom);
           fault_markers(out, report, x, kBottom);
           axis(out, y, Side::kLeft, kPlotL, "tokens/s");
           axis(out, x, Side::kBottom, kBottom, "simulated time (s)");
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

// Each node's run divided by the output tokens: what a token cost it, by activity.
void per_token(std::string& out, const ordered_json& report) {
  constexpr double kTop = 16, kBarH = 20, kGap = 10;
  const auto& nodes = report.at("nodes");
  const double tokens = report.at("summary").at("output_tokens").get<double>();
  const double bottom = kTop + nodes.size() * (kBarH + kGap);
  double longest = 0;
  for (const auto& n : nodes) longest = std::max(longest, dbl(n, "compute_s") + dbl(n, "comm_s") + dbl(n, "idle_s"));
  // A quarter more than the longest bar leaves room for its label.
  const Scale x{0, nice_ceiling(tokens > 0 ? 1.25e3 * longest / tokens : 0), kPlotL, kPlotR};
  figure(
      out, "per-token", "Per-token time on each node: compute, communication, waiting (ms per output token)", kPageW,
      bottom + 44, {{"compute", "compute"}, {"comm", "communication"}, {"idle", "waiting between steps"}}, [&] {
        if (tokens <= 0) text(out, "empty", (kPlotL + kPlotR) / 2, bottom / 2, "no tokens produced", "middle");
        for (std::size_t i = 0; i < nodes.size() && tokens > 0; ++i) {
          const auto& n = nodes[i];
          const double ms[] = {1e3 * dbl(n, "compute_s") / tokens, 1e3 * dbl(n, "comm_s") / tokens,
                               1e3 * dbl(n, "idle_s") / tokens};
          const double y = kTop + i * (kBarH + kGap);
          put(out,
              "<g class=\"breakdown\" data-node=\"{}\" data-compute-ms=\"{}\" data-comm-ms=\"{}\" data-wait-ms=\"{}\">",
              esc(str(n, "name")), num(ms[0]), num(ms[1]), num(ms[2]));
          text(out, "lane-label", 8, y + kBarH / 2 + 4, str(n, "name"));
          double at = 0;
          const char* parts[] = {"compute", "comm", "idle"};
          for (int p = 0; p < 3; ++p) {
            rect(out, parts[p], x(at), y, x(at + ms[p]) - x(at), kBarH);
            at += ms[p];
          }
          text(out, "bar-label", x(at) + 6, y + kBarH / 2 + 4,
               fmt::format("{:.2f} + {:.2f} + {:.2f} = {:.2f} ms", ms[0], ms[1], ms[2], at));
          out += "</g>";
        }
        axis(out, x, Side::kBottom, bottom, "ms per output token");
      });
}

void events_table(std::string& out, const ordered_json& report) {
  const auto& events = list(report, "events");
  const auto& phases = list(report, "phases");
  if (events.empty() && phases.empty()) return;
  out +=
      "<section><h2>Faults and recovery</h2><table id=\"events\"><tr><th>time (s)</th><th>what</th>"
      "<th>target</th><th>detail / until</th></tr>";
  for (const auto& e : events)
    put(out, "<tr class=\"event\"><td>{:.3f}</td><td>{}</td><td>{}</td><td>{}</td></tr>", dbl(e, "t_s"),
        esc(str(e, "kind")), esc(optional_str(e, "target")), esc(optional_str(e, "detail")));
  for (const auto& p : phases)
    put(out, "<tr class=\"phase-row\"><td>{:.3f}</td><td>phase: {}</td><td>{}</td><td>{}</td></tr>", dbl(p, "start_s"),
        esc(str(p, "kind")), esc(optional_str(p, "target")),
        p.at("end_s").is_null() ? "end of run" : fmt::format("{:.3f} s", dbl(p, "end_s")));
  out += "</table></section>";
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
        "<td>{4:g}</td><td><span class=\"badge {5}\">{6}</span></td></tr>",
        esc(str(e, "metric")), pass ? "true" : "false", op_symbol(str(e, "op")), dbl(e, "bound"), dbl(e, "value"),
        pass ? "pass" : "fail", pass ? "PASS" : "FAIL");
  }
  out += "</table></section>";
}

constexpr const char* kStyle = R"css(
:root{color-scheme:light dark;--bg:#ffffff;--fg:#1f2328;--muted:#59636e;--line:#8c959f;--panel:#f6f8fa;
--compute:#2f6fdb;--comm:#e8912d;--idle:#e4e8ed;--link:#8250df;--tokens:#1a7f37;--bin:#2f6fdb;--wait:#a8c0ee;
--fail:#cf222e;--fault:#cf222e;--phase:rgba(191,135,0,.16);--pass:#1a7f37;--mem:#8250df;--memfree:#e4e8ed}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#656c76;--panel:#161b22;
--compute:#4c8dff;--comm:#f0a03c;--idle:#262c36;--link:#b083f0;--tokens:#3fb950;--bin:#4c8dff;--wait:#2f4a7a;
--fail:#ff6a69;--fault:#ff6a69;--phase:rgba(210,153,34,.22);--pass:#3fb950;--mem:#b083f0;--memfree:#262c36}}
body{margin:0 auto;max-width:1360px;padding:16px 20px;background:var(--bg);color:var(--fg);
font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:18px 0 6px}
.desc{margin:0 0 4px}.meta,.muted{color:var(--muted)}.meta{margin:0;font-size:13px}
.top{display:grid;grid-template-columns:1fr 640px;gap:16px;align-items:start;margin-top:12px}
.tiles{display:grid;grid-template-columns:repeat(2,1fr);gap:8px}
.tile{background:var(--panel);border-radius:6px;padding:8px 12px}.tile .v{font-size:20px;font-weight:600}
.tile small{font-size:12px;font-weight:400;color:var(--muted)}.tile .k{color:var(--muted);font-size:12px}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:16px}
figure{margin:14px 0 0;background:var(--panel);border-radius:6px;padding:8px 10px}
figcaption{font-weight:600;margin-bottom:4px}svg{display:block;width:100%;height:auto}
.lane rect,.column{shape-rendering:crispEdges}
svg text{fill:var(--fg);font-size:11px}.muted,svg .muted{fill:var(--muted)}
.axis line{stroke:var(--line);stroke-width:1}.axis text{fill:var(--muted)}.axis .axis-title{fill:var(--fg);font-size:12px}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12px;color:var(--muted);margin-top:4px}
.legend span{display:inline-flex;align-items:center;gap:5px}.swatch{width:12px;height:12px;display:inline-block}
.compute{fill:var(--compute)}.comm{fill:var(--comm)}.idle{fill:var(--idle)}.link-util{fill:var(--link)}
.tokens{fill:var(--tokens)}.bin{fill:var(--bin)}.req-wait{fill:var(--wait)}.req-decode{fill:var(--tokens)}
.failed{fill:var(--fail)}.lane-bg{fill:var(--bg)}.phase{fill:var(--phase)}.fault-swatch{fill:var(--fault)}
.percentile{stroke:var(--fg);stroke-dasharray:4 3}rect.percentile{fill:none;stroke-width:2}
.fault-marker{stroke:var(--fault);stroke-width:2;stroke-dasharray:5 3}svg .marker-label{font-size:10px}
svg .phase-label{font-size:10px;fill:var(--muted);font-style:italic}svg .group-label{fill:var(--muted)}
svg .lane-label{font-weight:600}.lane-label tspan{font-weight:400}
line.cable{stroke:var(--link);stroke-width:2.5}svg .cable-label{font-size:11px}.label-bg{fill:var(--panel)}
.node-box{fill:var(--bg);stroke:var(--line);stroke-width:1.5}.node-box.failed{stroke:var(--fail);stroke-width:3}
svg .node-name{font-weight:700;font-size:13px}svg .node-hw{font-size:11px;fill:var(--muted)}
.mem-weights{fill:var(--mem)}.mem-free{fill:var(--memfree)}svg .bar-label{font-size:11px;fill:var(--muted)}
table{border-collapse:collapse;font-size:13px}th,td{text-align:left;padding:4px 12px;border-bottom:1px solid var(--idle)}
.badge{font-weight:700;padding:1px 8px;border-radius:10px;color:#fff}.badge.pass{background:var(--pass)}.badge.fail{background:var(--fail)}
footer{margin-top:18px;font-size:12px;color:var(--muted)}
.series-0{fill:var(--compute);stroke:var(--compute)}.series-1{fill:var(--comm);stroke:var(--comm)}
.series-2{fill:var(--tokens);stroke:var(--tokens)}.series-3{fill:var(--link);stroke:var(--link)}
polyline.best{fill:none;stroke-width:2}circle.point{stroke:none}circle.point.chosen{stroke:var(--fg);stroke-width:2}
line.slo{stroke:var(--fail);stroke-dasharray:6 4;stroke-width:1.5}
)css";

// --- plans ---------------------------------------------------------------------

using Points = std::vector<const ordered_json*>;

double speed(const ordered_json& c) { return dbl(c.at("figures"), "decode_tokens_per_s"); }

Legend link_legend(const std::vector<std::string>& links) {
  Legend items;
  for (std::size_t k = 0; k < links.size(); ++k) items.push_back({fmt::format("series-{}", k % 4), links[k]});
  return items;
}

// Decode tokens/s against node count, one colour per link, the best of each count joined.
void speed_by_nodes(std::string& out, const ordered_json& plan, const std::vector<std::string>& links,
                    const Points& points) {
  const double top = 20, bottom = 330;
  double max_speed = 0;
  for (const auto* c : points) max_speed = std::max(max_speed, speed(*c));
  const Scale x{0, static_cast<double>(plan.at("query").at("max_nodes").get<int>()) + 1, kPlotL, kPlotR};
  const Scale y{0, nice_ceiling(max_speed), bottom, top};
  figure(out, "speed-by-nodes", "Decode tokens/s against node count, per link type (best plan of each count joined)",
         kPageW, bottom + 50, link_legend(links), [&] {
           axis(out, x, Side::kBottom, bottom, "nodes");
           axis(out, y, Side::kLeft, kPlotL, "decode tokens/s (under the workload)");
           for (std::size_t k = 0; k < links.size(); ++k) {
             std::map<int, double> best;
             for (const auto* c : points) {
               if (str(*c, "link") != links[k]) continue;
               const int n = c->at("node_count").get<int>();
               best[n] = std::max(best[n], speed(*c));
               put(out,
                   "<circle class=\"point series-{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" data-link=\"{}\" "
                   "data-nodes=\"{}\" "
                   "data-tokens-per-s=\"{}\"></circle>",
                   k % 4, x(n), y(speed(*c)), esc(links[k]), n, num(speed(*c)));
             }
             std::string pts;
             for (const auto& [n, v] : best) pts += fmt::format("{:.1f},{:.1f} ", x(n), y(v));
             put(out, "<polyline class=\"best series-{}\" points=\"{}\"></polyline>", k % 4, pts);
           }
         });
}

// Price against decode tokens/s; the SLO's inter-token bound as the least speed a request needs.
void price_vs_speed(std::string& out, const ordered_json& plan, const std::vector<std::string>& links,
                    const Points& points) {
  const double top = 20, bottom = 330;
  double max_speed = 0, max_price = 0;
  for (const auto* c : points) {
    max_speed = std::max(max_speed, speed(*c));
    max_price = std::max(max_price, dbl(*c, "price_usd"));
  }
  const double slo_itl = dbl(plan.at("query"), "slo_itl_s");
  if (slo_itl > 0) max_speed = std::max(max_speed, 1 / slo_itl);
  const Scale x{0, nice_ceiling(max_speed), kPlotL, kPlotR};
  const Scale y{0, nice_ceiling(max_price), bottom, top};
  const auto chosen = [&](const ordered_json& c) {
    return plan.at("cheapest_meeting_slo") == c.at("index") || plan.at("fastest") == c.at("index");
  };
  figure(out, "price-vs-speed", "Price against decode tokens/s (ringed: cheapest meeting the SLO, fastest)", kPageW,
         bottom + 50, link_legend(links), [&] {
           axis(out, x, Side::kBottom, bottom, "decode tokens/s (under the workload)");
           axis(out, y, Side::kLeft, kPlotL, "price (USD)");
           if (slo_itl > 0) {
             put(out,
                 "<line class=\"slo\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
                 "data-tokens-per-s=\"{3}\"></line>",
                 x(1 / slo_itl), top, bottom, num(1 / slo_itl));
             text(out, "muted", x(1 / slo_itl) + 4, top + 12, fmt::format("SLO: ITL {:g} ms", 1e3 * slo_itl));
           }
           for (const auto* c : points) {
             const auto k = std::find(links.begin(), links.end(), str(*c, "link")) - links.begin();
             put(out,
                 "<circle class=\"point series-{}{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" data-index=\"{}\" "
                 "data-price=\"{}\" "
                 "data-tokens-per-s=\"{}\"></circle>",
                 k % 4, chosen(*c) ? " chosen" : "", x(speed(*c)), y(dbl(*c, "price_usd")), c->at("index").get<int>(),
                 num(dbl(*c, "price_usd")), num(speed(*c)));
           }
         });
}

}  // namespace

std::string render_plan_html(const ordered_json& plan) {
  const auto& q = plan.at("query");
  const auto links = q.at("links").get<std::vector<std::string>>();
  Points points;
  for (const auto& c : plan.at("candidates"))
    if (str(c, "status") == "simulated") points.push_back(&c);
  std::string out;
  put(out,
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width, initial-scale=1\"><title>meshinfer plan: {}</title><style>{}</style></head><body>",
      esc(str(q, "model")), kStyle);
  put(out,
      "<header><h1>Capacity plan: {} {}</h1><p class=\"muted\">{} candidates, {} simulated; profile {}; SLO TTFT p99 "
      "&le; {} s, ITL p99 &le; {} s (0: none)</p></header>",
      esc(str(q, "model")), esc(str(q, "quant")), plan.at("candidates").size(), points.size(), esc(str(q, "profile")),
      num(dbl(q, "slo_ttft_s")), num(dbl(q, "slo_itl_s")));
  speed_by_nodes(out, plan, links, points);
  price_vs_speed(out, plan, links, points);
  put(out, "<footer>Drawn by meshinfer from plan.json ({}); every figure is simulated.</footer></body></html>\n",
      esc(str(plan, "schema")));
  return out;
}

namespace {}  // namespace

std::string render_html(const ordered_json& report) {
  std::string out;
  put(out,
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width, initial-scale=1\"><title>meshinfer: {}</title><style>{}</style></head><body>",
      esc(str(report.at("scenario"), "name")), kStyle);
  header(out, report);
  out += "<div class=\"top\">";
  summary_tiles(out, report);
  cluster(out, report);
  out += "</div>";
  timeline(out, report);
  throughput(out, report);
  out += "<div class=\"pair\">";
  histogram(out, report, "ttft_s", "ttft", "Time to first token (completed requests)", "TTFT (s)", 1);
  histogram(out, report, "itl_s", "itl", "Inter-token latency (every gap between two tokens)",
            "inter-token latency (ms)", 1e3);
  out += "</div>";
  per_token(out, report);
  events_table(out, report);
  expectations(out, report);
  put(out, "<footer>Drawn by meshinfer from report.json ({}); every figure is simulated time.</footer></body></html>\n",
      esc(str(report, "schema")));
  return out;
}

}  // namespace engine
