#include "engine/report/timeline_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/report/run_figures.hpp"
#include "engine/report/svg.hpp"

namespace engine::html {

namespace {

using nlohmann::ordered_json;

// Above the plot of every time chart, one band: event labels in two rows,
// then phase labels.
constexpr double kEventLabelY = 11, kPhaseTop = 26, kPhaseLabelY = 37, kPlotTop = 42;

Scale time_scale(const ordered_json& report) {
  const auto& tl = report.at("timeline");
  return {0, dbl(tl, "bucket_s") * tl.at("buckets").get<int>(), kPlotL, kPlotR};
}

// One row of the timeline: its label left of the plot, its band across it.
template <typename Body>
void lane(std::string& out, const std::string& data, double y, double h, const std::string& label,
          const std::string& detail, Body body) {
  put(out,
      "<g class=\"lane\" {}><text class=\"lane-label\" x=\"8\" y=\"{:.1f}\">{} <tspan "
      "class=\"muted\">{}</tspan></text>",
      data, y + h / 2 + 4, escape_markup(label), escape_markup(detail));
  rect(out, "lane-bg", kPlotL, y, kPlotR - kPlotL, h);
  body();
  out += "</g>";
}

// Recovery phases as translucent bands over a chart of time, down to `bottom`.
void phase_bands(std::string& out, const ordered_json& report, const Scale& x, double bottom) {
  for (const auto& p : optional_list(report, "phases")) {
    const double start = dbl(p, "start_s");
    const double end = p.at("end_s").is_null() ? x.d1 : dbl(p, "end_s");
    rect(out, "phase", x(start), kPhaseTop, std::max(1.0, x(end) - x(start)), bottom - kPhaseTop,
         fmt::format(" data-kind=\"{}\" data-target=\"{}\" data-start=\"{}\" data-end=\"{}\"",
                     escape_markup(str(p, "kind")), escape_markup(optional_str(p, "target")), num(start), num(end)));
    text(out, "phase-label", x(start) + 3, kPhaseLabelY, str(p, "kind"));
  }
}

// Fault events as vertical lines down to `bottom`, labelled in alternating rows
// so that neighbours do not collide.
void fault_markers(std::string& out, const ordered_json& report, const Scale& x, double bottom) {
  int i = 0;
  for (const auto& e : optional_list(report, "events")) {
    const double t = dbl(e, "t_s");
    const std::string target = optional_str(e, "target");
    put(out,
        "<line class=\"fault-marker\" data-t=\"{0}\" data-kind=\"{1}\" data-target=\"{2}\" x1=\"{3:.1f}\" "
        "y1=\"{4:.1f}\" x2=\"{3:.1f}\" y2=\"{5:.1f}\"><title>{6}</title></line>",
        num(t), escape_markup(str(e, "kind")), escape_markup(target), x(t), kPhaseTop, bottom,
        escape_markup(fmt::format("{:g} s: {} {} {}", t, str(e, "kind"), target, optional_str(e, "detail"))));
    text(out, "marker-label", x(t) + 3, kEventLabelY + 11 * (i++ % 2),
         target.empty() ? str(e, "kind") : str(e, "kind") + " " + target);
  }
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
      escape_markup(fmt::format("request {}: {} prompt + {} output tokens, {}{}", rq.at("id").get<int>(),
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

// A cable's downtimes as bands across its lane, each to when it came back or
// to the end, saying when inside the first (the lane's label has no room).
void down_bands(std::string& out, const ordered_json& link, const Scale& x, double y, double h) {
  const auto& down = optional_list(link, "down");
  for (const auto& d : down) {
    const double from = dbl(d, "from_s"), to = d.at("to_s").is_null() ? x.d1 : dbl(d, "to_s");
    rect(out, "link-down", x(from), y, std::max(1.0, x(to) - x(from)), h,
         fmt::format(" data-from=\"{}\" data-to=\"{}\"", num(from), d.at("to_s").is_null() ? "" : num(to)));
  }
  if (!down.empty()) text(out, "down-label", x(dbl(down.front(), "from_s")) + 4, y + h / 2 + 4, downtime_text(link));
}

}  // namespace

void timeline_chart(std::string& out, const ordered_json& report) {
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
  if (!optional_list(report, "events").empty()) items.push_back({"fault-swatch", "fault / event"});
  if (!optional_list(report, "phases").empty()) items.push_back({"phase", "recovery phase"});
  const auto& cables = report.at("links");
  if (std::any_of(cables.begin(), cables.end(), [](const auto& l) { return l.contains("down"); }))
    items.push_back({"link-down", "cable down"});
  figure(out, "timeline", "Timeline: what each node and link did over simulated time", kPageW, bottom + 44, items, [&] {
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      const auto& node = nodes[n];
      const auto& totals = report.at("nodes")[n];
      const double y = kTop + n * (kNodeH + kGap);
      lane(
          out,
          fmt::format("data-kind=\"node\" data-node=\"{}\" data-compute-s=\"{}\" data-comm-s=\"{}\" data-idle-s=\"{}\"",
                      escape_markup(str(node, "name")), num(dbl(totals, "compute_s")), num(dbl(totals, "comm_s")),
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
      const auto& totals = report.at("links")[k];
      const double whole_run = dbl(totals, "utilization");
      lane(out,
           fmt::format("data-kind=\"link\" data-link=\"{}-{}\" data-card=\"{}\" data-utilization=\"{}\"",
                       escape_markup(a), escape_markup(b), escape_markup(str(l, "link")), num(whole_run)),
           y, kLinkH, a + "–" + b, str(l, "link") + " · " + percent(whole_run), [&] {
             for (std::size_t i = 0; i < l.at("bytes_a_to_b").size(); ++i) {
               const double bytes =
                   std::max(l.at("bytes_a_to_b")[i].get<double>(), l.at("bytes_b_to_a")[i].get<double>());
               const double h = capacity > 0 ? kLinkH * std::min(1.0, bytes / capacity / link_scale) : 0;
               const double x0 = x(i * bucket_s);
               rect(out, "link-util", x0, y + kLinkH - h, x((i + 1) * bucket_s) - x0, h);
             }
             down_bands(out, totals, x, y, kLinkH);
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

void throughput_chart(std::string& out, const ordered_json& report) {
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

}  // namespace engine::html
