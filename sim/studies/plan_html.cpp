#include "sim/studies/plan_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "engine/report/svg.hpp"
#include "engine/report/term_bars_html.hpp"
#include "sim/studies/plan_sweep.hpp"

namespace sim {

namespace {

using namespace engine::html;
using engine::escape_markup;
using nlohmann::ordered_json;

using Points = std::vector<const ordered_json*>;

double speed(const ordered_json& c) { return dbl(c.at("figures"), "decode_tokens_per_s"); }

Legend link_legend(const std::vector<std::string>& links) {
  Legend items;
  for (std::size_t k = 0; k < links.size(); ++k) items.push_back({fmt::format("series-{}", k % 4), links[k]});
  return items;
}

// A figure of the candidates against node count, one colour per link, the
// best of each count joined; `slo` (0: none) a bound drawn across.
struct ByNodes {
  const char* id;
  const char* title;
  const char* axis;
  const char* attribute;  // the data-* attribute each point carries its value in
  double (*value)(const ordered_json& candidate);
  bool lower_is_better;
  double slo;
};

void by_nodes(std::string& out, const ordered_json& plan, const std::vector<std::string>& links, const Points& points,
              const ByNodes& f) {
  const double top = 20, bottom = 330;
  double max_value = f.slo;
  for (const auto* c : points) max_value = std::max(max_value, f.value(*c));
  const Scale x{0, static_cast<double>(plan.at("query").at("max_nodes").get<int>()) + 1, kPlotL, kPlotR};
  const Scale y{0, nice_ceiling(max_value), bottom, top};
  figure(out, f.id, f.title, kPageW, bottom + 50, link_legend(links), [&] {
    axis(out, x, Side::kBottom, bottom, "nodes");
    axis(out, y, Side::kLeft, kPlotL, f.axis);
    if (f.slo > 0) {
      put(out, "<line class=\"slo\" x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{1:.1f}\" y2=\"{2:.1f}\" {3}=\"{4}\"></line>",
          kPlotL, kPlotR, y(f.slo), f.attribute, num(f.slo));
      text(out, "muted", kPlotL + 4, y(f.slo) - 4, fmt::format("SLO: {:g}", f.slo));
    }
    for (std::size_t k = 0; k < links.size(); ++k) {
      std::map<int, double> best;
      for (const auto* c : points) {
        if (str(*c, "link") != links[k]) continue;
        const int n = c->at("node_count").get<int>();
        const double v = f.value(*c);
        const auto [at, first] = best.emplace(n, v);
        if (!first) at->second = f.lower_is_better ? std::min(at->second, v) : std::max(at->second, v);
        put(out,
            "<circle class=\"point series-{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" data-link=\"{}\" "
            "data-nodes=\"{}\" {}=\"{}\"></circle>",
            k % 4, x(n), y(v), escape_markup(links[k]), n, f.attribute, num(v));
      }
      std::string pts;
      for (const auto& [n, v] : best) pts += fmt::format("{:.1f},{:.1f} ", x(n), y(v));
      put(out, "<polyline class=\"best series-{}\" points=\"{}\"></polyline>", k % 4, pts);
    }
  });
}

double ttft_p99(const ordered_json& c) { return dbl(c.at("figures").at("ttft_s"), "p99"); }

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

// Every candidate: the simulated ones with their figures and verdicts, then the
// dropped ones with the reason, so no cluster of the sweep goes unexplained.
void candidates_table(std::string& out, const ordered_json& plan) {
  out +=
      "<section><h2>Candidates simulated</h2><table id=\"candidates\"><tr><th>#</th><th>cluster / link / plan</th>"
      "<th>price USD</th><th>decode tok/s</th><th>TTFT p99 s</th><th>ITL p99 ms</th><th>N+1</th>"
      "<th>verdict</th></tr>";
  for (const auto& c : plan.at("candidates")) {
    if (str(c, "status") != "simulated") continue;
    const auto& f = c.at("figures");
    put(out,
        "<tr data-index=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>",
        c.at("index").get<int>(), c.at("index").get<int>(), escape_markup(describe_candidate(c)),
        fixed(dbl(c, "price_usd"), 0), fixed(speed(c), 1), fixed(ttft_p99(c), 3),
        fixed(1e3 * dbl(f.at("itl_s"), "p99"), 1), f.at("n_plus_1").at("tolerant").get<bool>() ? "yes" : "no",
        escape_markup(c.value("verdict", "")));
  }
  out +=
      "</table></section><section><h2>Candidates dropped</h2><table id=\"dropped\"><tr><th>#</th>"
      "<th>cluster / link / plan</th><th>price USD</th><th>why</th></tr>";
  for (const auto& c : plan.at("candidates")) {
    if (str(c, "status") == "simulated") continue;
    put(out, "<tr data-index=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}: {}</td></tr>", c.at("index").get<int>(),
        c.at("index").get<int>(), escape_markup(describe_candidate(c)), fixed(dbl(c, "price_usd"), 0),
        escape_markup(str(c, "status")), escape_markup(c.value("reason", "")));
  }
  out += "</table></section>";
}

}  // namespace

std::string render_plan_html(const ordered_json& plan) {
  const auto& q = plan.at("query");
  const auto links = q.at("links").get<std::vector<std::string>>();
  Points points;
  for (const auto& c : plan.at("candidates"))
    if (str(c, "status") == "simulated") points.push_back(&c);
  std::string out;
  page_head(out, "meshinfer plan: " + str(q, "model"));
  put(out,
      "<header><h1>Capacity plan: {} {}</h1><p class=\"verdict\">Verdict: {}.</p><p class=\"muted\">{} candidates, "
      "{} simulated; profile {}; {}workload: {}</p></header>",
      escape_markup(str(q, "model")), escape_markup(str(q, "quant")), escape_markup(str(plan, "verdict")),
      plan.at("candidates").size(), points.size(), escape_markup(str(q, "profile")),
      escape_markup(slo_text(dbl(q, "slo_ttft_s"), dbl(q, "slo_itl_s"), "; ")), escape_markup(str(q, "workload")));
  by_nodes(out, plan, links, points,
           {"speed-by-nodes", "Decode tokens/s against node count, per link type (best plan of each count joined)",
            "decode tokens/s (under the workload)", "data-tokens-per-s", speed, false, 0});
  // TTFT is what a slow link fails: the prompt's activations cross it at every layer.
  by_nodes(
      out, plan, links, points,
      {"ttft-by-nodes", "Time to first token (p99) against node count, per link type (best plan of each count joined)",
       "TTFT p99 (s)", "data-ttft-s", ttft_p99, true, dbl(q, "slo_ttft_s")});
  price_vs_speed(out, plan, links, points);
  if (plan.contains("scaling")) {
    put(out, "<section id=\"what-each-node-buys\"><h2>What each node buys: {}</h2>",
        escape_markup(scaling_subject(plan)));
    scaling_chart(out, plan.at("scaling"));
    out += "</section>";
  }
  candidates_table(out, plan);
  put(out, "<footer>Drawn by meshinfer from plan.json ({}); every figure is simulated.</footer></body></html>\n",
      escape_markup(str(plan, "schema")));
  return out;
}

}  // namespace sim
