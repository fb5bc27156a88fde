#include "engine/report/term_bars_html.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "engine/report/bottleneck.hpp"
#include "engine/report/svg.hpp"

namespace engine::html {

using nlohmann::ordered_json;

void term_bars(std::string& out, const char* id, const std::string& title, const TermRows& rows) {
  constexpr double kTop = 16, kBarH = 20, kGap = 10;
  const double bottom = kTop + rows.size() * (kBarH + kGap);
  double longest = 0;
  for (const auto& [label, t] : rows) longest = std::max({longest, dbl(*t, "token_s"), dbl(*t, "floor_s")});
  // A third more than the longest bar leaves room for its label.
  const Scale x{0, nice_ceiling(1.35e3 * longest), kPlotL, kPlotR};
  Legend legend;
  for (std::size_t k = 0; k < term_names().size(); ++k)
    legend.emplace_back(fmt::format("term-{}", k), term_names()[k].name);
  legend.emplace_back("floor-swatch", "floor (dashed): full bandwidth and peak, no dispatch");
  figure(out, id, title, kPageW, bottom + 44, legend, [&] {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& [label, t] = rows[i];
      const double y = kTop + i * (kBarH + kGap);
      put(out, "<g class=\"breakdown\" data-label=\"{}\" data-token-ms=\"{}\" data-floor-ms=\"{}\"",
          escape_markup(label), num(1e3 * dbl(*t, "token_s")), num(1e3 * dbl(*t, "floor_s")));
      for (const auto& term : term_names()) {
        std::string key = term.key;
        std::replace(key.begin(), key.end(), '_', '-');
        put(out, " data-{}=\"{}\"", key.substr(0, key.size() - 2) + "-ms", num(1e3 * dbl(*t, term.key)));
      }
      out += ">";
      text(out, "lane-label", 8, y + kBarH / 2 + 4, label);
      double at = 0;
      for (std::size_t k = 0; k < term_names().size(); ++k) {
        const double ms = std::max(0.0, 1e3 * dbl(*t, term_names()[k].key));
        rect(out, fmt::format("term-{}", k), x(at), y, x(at + ms) - x(at), kBarH);
        at += ms;
      }
      const double floor = x(1e3 * dbl(*t, "floor_s"));
      put(out, "<line class=\"floor\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", fixed(floor, 1), fixed(floor, 1),
          fixed(y - 3, 1), fixed(y + kBarH + 3, 1));
      text(out, "bar-label", x(at) + 6, y + kBarH / 2 + 4,
           fmt::format("{:.2f} ms (floor {:.2f})", 1e3 * dbl(*t, "token_s"), 1e3 * dbl(*t, "floor_s")));
      out += "</g>";
    }
    axis(out, x, Side::kBottom, bottom, "ms");
  });
}

void scaling_chart(std::string& out, const ordered_json& scaling) {
  TermRows rows;
  std::string limits;
  for (const auto& p : scaling.at("points")) {
    const int n = p.at("nodes").get<int>();
    if (str(p, "status") != "simulated") {
      limits += fmt::format("<li>{} node{}: {}: {}</li>", n, n == 1 ? "" : "s", escape_markup(str(p, "status")),
                            escape_markup(str(p, "reason")));
      continue;
    }
    rows.emplace_back(fmt::format("{} node{}, {:.1f} tok/s", n, n == 1 ? "" : "s", dbl(p, "decode_tokens_per_s")),
                      &p.at("decode"));
    if (p.contains("limit"))
      limits += fmt::format("<li data-nodes=\"{}\">{} nodes: x{:.2f}, held back by {}</li>", n, n, dbl(p, "speedup"),
                            escape_markup(held_back(p)));
  }
  if (!rows.empty())
    term_bars(out, "scaling",
              fmt::format("Scaling: one decode token on 1, 2, 4 ... nodes ({} plan, {})", str(scaling, "strategy"),
                          str(scaling, "workload")),
              rows);
  put(out, "<ul id=\"scaling-limits\">{}</ul>", limits);
}

}  // namespace engine::html
