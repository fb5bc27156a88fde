#include "engine/report/svg.hpp"

#include <cmath>

#include "engine/report/timeline.hpp"

namespace engine::html {

namespace {

using nlohmann::ordered_json;

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
line.cable[data-state=down]{stroke:var(--fail);stroke-dasharray:8 5}svg .cable-label.down{fill:var(--fail)}
.link-down{fill:var(--fail);fill-opacity:.3}svg .down-label{fill:var(--fail);font-size:10px;font-weight:600}
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
.term-0{fill:#2f6fdb}.term-1{fill:#1a3f8a}.term-2{fill:#8fb3f0}.term-3{fill:#e8912d}.term-4{fill:#f5c58a}
.term-5{fill:var(--link)}.term-6{fill:var(--idle)}line.floor{stroke:var(--fg);stroke-width:2;stroke-dasharray:3 2}.floor-swatch{fill:var(--fg)}
)css";

}  // namespace

std::string num(double v) { return fmt::format("{}", v); }
std::string fixed(double v, int digits) { return fmt::format("{:.{}f}", v, digits); }
std::string percent(double fraction) { return fixed(100 * fraction, fraction < 0.1 ? 2 : 1) + "%"; }
double dbl(const ordered_json& j, const char* key) { return j.at(key).get<double>(); }
std::string str(const ordered_json& j, const char* key) { return j.at(key).get<std::string>(); }
std::string optional_str(const ordered_json& j, const char* key) {
  return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : "";
}

const ordered_json& optional_list(const ordered_json& j, const char* key) {
  static const ordered_json empty = ordered_json::array();
  return j.contains(key) ? j.at(key) : empty;
}

double nice_ceiling(double v) {
  if (v <= 0) return 1;
  const double step = nice_step(v / 5);
  return std::ceil(v / step - 1e-9) * step;
}

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
        escape_markup(title));
  else
    put(out,
        "<text class=\"axis-title\" transform=\"translate({:.1f} {:.1f}) rotate(-90)\" "
        "text-anchor=\"middle\">{}</text>",
        at - 52, mid, escape_markup(title));
  out += "</g>";
}

void rect(std::string& out, std::string_view cls, double x, double y, double w, double h, const std::string& data) {
  const auto tenth = [](double v) { return std::round(v * 10) / 10; };
  const double x0 = tenth(x), y0 = tenth(y), x1 = tenth(x + w), y1 = tenth(y + h);
  if (x1 <= x0 || y1 <= y0) return;
  put(out, "<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"{}></rect>", cls, x0, y0,
      x1 - x0, y1 - y0, data);
}

void text(std::string& out, std::string_view cls, double x, double y, const std::string& content,
          std::string_view anchor) {
  put(out, "<text class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">{}</text>", cls, x, y, anchor,
      escape_markup(content));
}

void legend(std::string& out, const Legend& items) {
  if (items.empty()) return;
  out += "<div class=\"legend\">";
  for (const auto& [cls, label] : items)
    put(out,
        "<span><svg class=\"swatch\" viewBox=\"0 0 12 12\"><rect class=\"key {}\" width=\"12\" "
        "height=\"12\"></rect></svg>{}</span>",
        cls, escape_markup(label));
  out += "</div>";
}

void page_head(std::string& out, const std::string& title) {
  put(out,
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{}</style></head><body>",
      escape_markup(title), kStyle);
}

}  // namespace engine::html
