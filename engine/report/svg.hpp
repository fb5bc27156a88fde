// The pieces that every HTML page of meshinfer draws with (report.html and
// plan.html): escaping, the JSON a page reads, scales, axes, shapes, legends,
// figures and the page's head with its one stylesheet. Inline SVG only: a page
// fetches nothing.
#pragma once

#include <fmt/format.h>

#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/report/markup.hpp"

namespace engine::html {

using Legend = std::vector<std::pair<std::string, std::string>>;  // (class, label)

// Every chart spans the page width in viewBox units; CSS scales it to the window.
inline constexpr double kPageW = 1320;
// Where the plot area of a full-width chart starts and ends: axis labels go left of it.
inline constexpr double kPlotL = 190, kPlotR = 1300;

template <typename... Args>
void put(std::string& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

// data-* values: the shortest text that reads back as the same number.
std::string num(double v);

// Figures as a person reads them: `digits` decimals; a percentage of a fraction.
std::string fixed(double v, int digits);
std::string percent(double fraction);

// Reading the JSON a page draws; a missing key throws nlohmann's out_of_range.
double dbl(const nlohmann::ordered_json& j, const char* key);
std::string str(const nlohmann::ordered_json& j, const char* key);
std::string optional_str(const nlohmann::ordered_json& j, const char* key);  // "" when absent or not text
// A list the report may lack (events and phases exist only in fault runs): empty when absent.
const nlohmann::ordered_json& optional_list(const nlohmann::ordered_json& j, const char* key);

// A round upper bound for an axis: a multiple of a 1/2/5 step; 1 for v <= 0.
double nice_ceiling(double v);

struct Scale {
  double d0, d1, r0, r1;  // domain [d0, d1] onto range [r0, r1]
  double operator()(double v) const { return d1 > d0 ? r0 + (v - d0) / (d1 - d0) * (r1 - r0) : r0; }
};

enum class Side { kBottom, kLeft };

// Baseline, ticks at 1/2/5 steps over the domain, and the title (with its unit).
void axis(std::string& out, const Scale& s, Side side, double at, const std::string& title);

// Edges rounded before the size is taken: neighbours share an edge exactly and
// crisp rendering leaves no hairline between them. Nothing when empty.
void rect(std::string& out, std::string_view cls, double x, double y, double w, double h, const std::string& data = "");

void text(std::string& out, std::string_view cls, double x, double y, const std::string& content,
          std::string_view anchor = "start");

void legend(std::string& out, const Legend& items);

// A chart: caption, an SVG of `height` viewBox units drawn by `body`, a legend.
template <typename Body>
void figure(std::string& out, const char* id, const std::string& title, double width, double height,
            const Legend& items, Body body) {
  put(out,
      "<figure class=\"chart\" id=\"{0}\"><figcaption>{1}</figcaption>"
      "<svg viewBox=\"0 0 {2} {3}\" role=\"img\" aria-label=\"{1}\">",
      id, escape_markup(title), width, height);
  body();
  out += "</svg>";
  legend(out, items);
  out += "</figure>";
}

// "<!DOCTYPE html>..." up to and including "<body>": the title and the shared
// stylesheet (light and dark follow the viewer's prefers-color-scheme).
void page_head(std::string& out, const std::string& title);

}  // namespace engine::html
