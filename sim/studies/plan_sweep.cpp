#include "sim/studies/plan_sweep.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "engine/cards/stack_profile.hpp"
#include "engine/input/workload.hpp"
#include "engine/plan/planner.hpp"
#include "engine/report/bottleneck.hpp"
#include "engine/report/report.hpp"
#include "sim/scenario_run.hpp"
#include "sim/studies/scaling.hpp"
#include "sim/studies/worker_pool.hpp"

namespace sim {

namespace {

using json = nlohmann::ordered_json;

constexpr int kTrialOutputTokens = 16;  // enough decode steps for a steady ITL
constexpr int kMaxTrialRequests = 16;
constexpr double kDetectS = 0.25;  // the scenario default heartbeat timeout

struct Spec {
  std::vector<std::string> hardware;
  std::string link;
  engine::Strategy strategy;
};

// Every multiset of `n` cards, as non-decreasing indexes into `cards`.
void mixes(int n, int cards, std::vector<int>& cur, std::vector<std::vector<int>>& out) {
  if (static_cast<int>(cur.size()) == n) return out.push_back(cur);
  for (int c = cur.empty() ? 0 : cur.back(); c < cards; ++c) {
    cur.push_back(c);
    mixes(n, cards, cur, out);
    cur.pop_back();
  }
}

engine::Scenario scenario_of(const PlanQuery& q, const Spec& spec) {
  engine::Scenario s;
  s.name = "plan";
  s.file = "plan";
  s.seed = q.seed;
  s.level = q.level;
  const int n = static_cast<int>(spec.hardware.size());
  for (int i = 0; i < n; ++i) s.nodes.push_back({"n" + std::to_string(i + 1), spec.hardware[i]});
  s.fabric.link = spec.link;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) s.fabric.cables.push_back({a, b, 0, 0, spec.link});
  s.model = q.model;
  s.quant = q.quant;
  s.parallelism = spec.strategy;
  s.profile = q.profile;
  s.workload = q.workload;
  return s;
}

// Why a full mesh of this spec cannot be cabled, or empty.
std::string cabling_problem(const Spec& spec, const engine::Catalog& catalog) {
  const auto& link = catalog.link(spec.link);
  const int need = static_cast<int>(spec.hardware.size()) - 1;
  if (link.switched || need == 0) return "";
  for (const auto& hw : spec.hardware) {
    const auto& ports = catalog.hardware(hw).ports;
    const int have = ports.count(link.port_kind) ? ports.at(link.port_kind) : 0;
    if (have < need)
      return fmt::format("a full mesh of {} needs {} {} ports per node; {} has {}", need + 1, need, link.port_kind, hw,
                         have);
  }
  return "";
}

json summary_of(const engine::Scenario& s, const engine::Catalog& catalog, const engine::Plan& plan,
                const engine::StackProfile& profile, std::vector<engine::Request> requests) {
  const auto r = run_in_child([&] {
    const auto result = simulate(s, catalog, plan, profile, std::move(requests));
    return build_report(s, catalog, plan, profile.name, result, s.seed)["summary"].dump();
  });
  if (!r.ok) throw std::runtime_error(r.output);
  return json::parse(r.output);
}

std::vector<engine::Request> batch_one(const PlanQuery& q) {
  auto requests = engine::make_requests(q.workload, q.seed);
  requests.resize(1);
  requests[0].output_tokens = kTrialOutputTokens;
  requests[0].arrival_s = 0;
  return requests;
}

// The workload itself, shortened so a sweep of hundreds of clusters stays quick.
std::vector<engine::Request> workload_trial(const PlanQuery& q) {
  auto requests = engine::make_requests(q.workload, q.seed);
  const int keep = std::min<int>(requests.size(), std::max(kMaxTrialRequests, 2 * q.workload.concurrency));
  requests.resize(keep);
  for (auto& r : requests) r.output_tokens = std::min(r.output_tokens, 2 * kTrialOutputTokens);
  return requests;
}

bool concurrent(const engine::Workload& w) { return w.arrival != "closed" || w.concurrency > 1; }

// After losing one node of each hardware kind present: does the model still
// fit, how long until it serves again, how fast then. The worst case counts.
json n_plus_one(const PlanQuery& q, const Spec& spec, const engine::Catalog& catalog,
                const engine::StackProfile& profile) {
  if (spec.hardware.size() < 2) return {{"tolerant", false}, {"reason", "a single node has no survivor"}};
  json worst;
  for (const auto& lost : std::set<std::string>(spec.hardware.begin(), spec.hardware.end())) {
    Spec survivors = spec;
    survivors.hardware.erase(std::find(survivors.hardware.begin(), survivors.hardware.end(), lost));
    json entry{{"lost", lost}};
    try {
      engine::Scenario s = scenario_of(q, survivors);
      engine::Plan plan;
      std::string refusals;
      for (engine::Strategy strategy : {spec.strategy, engine::Strategy::kTensorUneven, engine::Strategy::kPipeline}) {
        try {
          plan = engine::make_plan(s, catalog, strategy);
          s.parallelism = strategy;
          break;
        } catch (const engine::PlanError& e) {
          refusals += std::string(refusals.empty() ? "" : "; ") + e.what();
        }
      }
      if (plan.shards.empty()) throw engine::PlanError(refusals);
      double reload = 0;
      for (const auto& sh : plan.shards)
        reload = std::max(reload, sh.weight_bytes / catalog.hardware(sh.hardware).ssd_read_bandwidth);
      entry["tolerant"] = true;
      entry["strategy"] = *s.parallelism;
      entry["recovery_s"] = kDetectS + reload;
      entry["decode_tokens_per_s"] = summary_of(s, catalog, plan, profile, batch_one(q))["decode_tokens_per_s"];
    } catch (const engine::PlanError& e) {
      entry["tolerant"] = false;
      entry["reason"] = e.what();
    }
    const bool worse = worst.is_null() || (!entry["tolerant"].get<bool>() && worst["tolerant"].get<bool>()) ||
                       (entry["tolerant"].get<bool>() && worst["tolerant"].get<bool>() &&
                        entry["decode_tokens_per_s"].get<double>() < worst["decode_tokens_per_s"].get<double>());
    if (worse) worst = entry;
  }
  return worst;
}

json simulate_candidate(const PlanQuery& q, const Spec& spec, const engine::Catalog& catalog) {
  const auto profile = engine::StackProfile::load(catalog.dir(), q.profile);
  const engine::Scenario s = scenario_of(q, spec);
  const engine::Plan plan = engine::make_plan(s, catalog, spec.strategy);
  const json b1 = summary_of(s, catalog, plan, profile, batch_one(q));
  const json load = concurrent(q.workload) ? summary_of(s, catalog, plan, profile, workload_trial(q)) : b1;
  json f;
  f["kv_capacity_tokens"] = plan.kv_capacity_tokens;
  f["decode_tokens_per_s_batch1"] = b1["decode_tokens_per_s"];
  f["decode_tokens_per_s"] = load["decode_tokens_per_s"];
  f["prefill_tokens_per_s"] = b1["prefill_tokens_per_s"];
  f["ttft_s"] = load["ttft_s"];
  f["itl_s"] = load["itl_s"];
  f["n_plus_1"] = n_plus_one(q, spec, catalog, profile);
  return f;
}

}  // namespace

std::string describe_candidate(const nlohmann::ordered_json& c) {
  std::map<std::string, int> count;
  for (const auto& hw : c["nodes"]) count[hw.get<std::string>()] += 1;
  std::string out;
  for (const auto& [hw, k] : count) out += fmt::format("{}{}x {}", out.empty() ? "" : " + ", k, hw);
  return fmt::format("{} / {} / {}", out, c["link"].get<std::string>(), c["strategy"].get<std::string>());
}

namespace {

// The SLO verdict of a simulated candidate, or empty when it meets it.
std::string slo_miss(const PlanQuery& q, const json& f) {
  const double ttft = f["ttft_s"]["p99"], itl = f["itl_s"]["p99"];
  if (q.slo_ttft_s > 0 && ttft > q.slo_ttft_s) return fmt::format("TTFT p99 {:.3f} s > {:.3f} s", ttft, q.slo_ttft_s);
  if (q.slo_itl_s > 0 && itl > q.slo_itl_s)
    return fmt::format("ITL p99 {:.1f} ms > {:.1f} ms", 1e3 * itl, 1e3 * q.slo_itl_s);
  return "";
}

bool has_slo(const PlanQuery& q) { return q.slo_ttft_s > 0 || q.slo_itl_s > 0; }

}  // namespace

std::string slo_text(double ttft_s, double itl_s, const std::string& end) {
  std::vector<std::string> bounds;
  if (ttft_s > 0) bounds.push_back(fmt::format("TTFT p99 <= {:g} s", ttft_s));
  if (itl_s > 0) bounds.push_back(fmt::format("ITL p99 <= {:g} ms", 1e3 * itl_s));
  return bounds.empty() ? "" : fmt::format("SLO: {}{}", fmt::join(bounds, ", "), end);
}

namespace {

std::string distribution_text(const engine::Distribution& d) {
  if (d.kind == "fixed") return fmt::format("{:g}", d.value);
  if (d.kind == "uniform") return fmt::format("{:g}-{:g} (uniform)", d.min, d.max);
  return fmt::format("{} mean {:g}, sd {:g}", d.kind, d.mean, d.stddev);
}

// What every candidate was simulated serving, in a line.
std::string workload_text(const engine::Workload& w) {
  if (w.arrival == "trace") return fmt::format("{} requests replayed from a trace at their logged times", w.requests);
  const std::string arrival = w.arrival == "poisson" ? fmt::format("Poisson arrivals at {:g}/s", w.rate_per_s)
                                                     : fmt::format("closed loop, concurrency {}", w.concurrency);
  return fmt::format("{} request{} of {} prompt + {} output tokens, {}", w.requests, w.requests == 1 ? "" : "s",
                     distribution_text(w.prompt_tokens), distribution_text(w.output_tokens), arrival);
}

double decode_speed(const json& c) { return c["figures"]["decode_tokens_per_s"].get<double>(); }
double price(const json& c) { return c["price_usd"].get<double>(); }

// Why the answer is not cheaper: the candidates of the next lower price (the
// next smaller cluster) and why the best of them fails, by the figure it
// misses or the reason it was dropped. Empty when nothing was cheaper.
std::string why_not_cheaper(const json& all, std::size_t answer) {
  const json* best = nullptr;
  for (const auto& c : all) {
    if (price(c) >= price(all[answer])) continue;
    const auto better = [&] {
      if (price(c) != price(*best)) return price(c) > price(*best);
      if ((c["status"] == "simulated") != ((*best)["status"] == "simulated")) return c["status"] == "simulated";
      return c["status"] == "simulated" && decode_speed(c) > decode_speed(*best);
    };
    if (!best || better()) best = &c;
  }
  if (!best) return "";
  const std::string why = (*best)["status"] == "simulated" ? (*best)["verdict"].get<std::string>()
                                                            : (*best)["status"].get<std::string>() + ": " +
                                                                  (*best).value("reason", std::string());
  return fmt::format("; the next cheaper, #{} {} ({:.0f} USD), {}", (*best)["index"].get<int>(), describe_candidate(*best),
                     price(*best), why);
}

void rank(const PlanQuery& q, json& out) {
  json& all = out["candidates"];
  std::optional<std::size_t> cheapest, fastest;
  for (std::size_t i = 0; i < all.size(); ++i) {
    json& c = all[i];
    if (c["status"] != "simulated") continue;
    const std::string miss = slo_miss(q, c["figures"]);
    c["meets_slo"] = miss.empty();
    if (!miss.empty()) c["verdict"] = "misses the SLO: " + miss;
    if (!fastest || decode_speed(c) > decode_speed(all[*fastest])) fastest = i;
    if (miss.empty() && (!cheapest || price(c) < price(all[*cheapest]) ||
                         (price(c) == price(all[*cheapest]) && decode_speed(c) > decode_speed(all[*cheapest]))))
      cheapest = i;
  }
  out["cheapest_meeting_slo"] = cheapest ? json(*cheapest) : json(nullptr);
  out["fastest"] = fastest ? json(*fastest) : json(nullptr);
  constexpr const char* kNoneMeetsSlo = "no simulated candidate meets the SLO; each one's verdict says by how much";
  if (!cheapest && fastest) out["no_candidate_meets_slo"] = kNoneMeetsSlo;
  // Without an SLO every candidate qualifies: the verdicts say cheapest, not "meeting the SLO".
  const std::string meeting = has_slo(q) ? " meeting the SLO" : "";
  json& ranked = out["candidates"];  // again: a key added to `out` moves what `all` pointed into
  const std::string verdict =
      cheapest ? fmt::format("the cheapest{}: #{}, {}, {:.0f} USD, {:.2f} decode tok/s under the workload", meeting,
                             *cheapest, describe_candidate(ranked[*cheapest]), price(ranked[*cheapest]),
                             decode_speed(ranked[*cheapest]))
      : fastest ? kNoneMeetsSlo
                : "no candidate could be simulated; plan.json says why each was dropped";
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    json& c = ranked[i];
    if (c["status"] != "simulated" || c.contains("verdict")) continue;
    if (i == cheapest && i == fastest)
      c["verdict"] = "cheapest" + meeting + ", and fastest";
    else if (i == cheapest)
      c["verdict"] = "cheapest" + meeting;
    else if (i == fastest)
      c["verdict"] = "fastest overall";
    else if (cheapest) {
      // Rounded first: a speed a hair under the cheapest's is "the same", not "-0%".
      const double gain = std::round(100 * (decode_speed(c) / decode_speed(ranked[*cheapest]) - 1));
      c["verdict"] = fmt::format("{}costs {:.0f} USD more than #{} ({}) for {}", has_slo(q) ? "meets the SLO but " : "",
                                 price(c) - price(ranked[*cheapest]), *cheapest, describe_candidate(ranked[*cheapest]),
                                 gain == 0 ? "the same decode speed" : fmt::format("{:+.0f}% decode speed", gain));
    }
  }
  // After the candidates' verdicts: a cheaper one that was simulated fails by its own.
  out["verdict"] = cheapest ? verdict + why_not_cheaper(ranked, *cheapest) : verdict;  // last, for the same reason
}

}  // namespace

json run_plan_sweep(const PlanQuery& q, const engine::Catalog& catalog) {
  const auto& model = catalog.model(q.model);
  model.quant(q.quant);
  std::vector<Spec> specs;
  for (int n = 1; n <= q.max_nodes; ++n) {
    std::vector<std::vector<int>> all;
    std::vector<int> cur;
    mixes(n, static_cast<int>(q.hardware.size()), cur, all);
    for (const auto& mix : all) {
      Spec spec;
      for (int c : mix) spec.hardware.push_back(q.hardware[c]);
      // One node has no links and one placement.
      for (const auto& link : n == 1 ? std::vector<std::string>{q.links[0]} : q.links)
        for (const auto& strategy : n == 1 ? std::vector<engine::Strategy>{q.strategies[0]} : q.strategies) {
          spec.link = link;
          spec.strategy = strategy;
          specs.push_back(spec);
        }
    }
  }
  json out;
  out["schema"] = "meshinfer.plan/1";
  out["query"] = {{"model", q.model},         {"quant", q.quant},
                  {"hardware", q.hardware},   {"max_nodes", q.max_nodes},
                  {"links", q.links},         {"strategies", q.strategies},
                  {"profile", q.profile},     {"slo_ttft_s", q.slo_ttft_s},
                  {"slo_itl_s", q.slo_itl_s}, {"seed", q.seed},
                  {"simulation_level", engine::to_string(q.level)}, {"workload", workload_text(q.workload)}};
  json candidates = json::array();
  std::vector<int> to_simulate;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const Spec& spec = specs[i];
    json c{{"index", i},
           {"nodes", spec.hardware},
           {"node_count", spec.hardware.size()},
           {"link", spec.link},
           {"strategy", spec.strategy}};
    double price = 0, power = 0;
    for (const auto& hw : spec.hardware) {
      price += catalog.hardware(hw).price_usd;
      power += catalog.hardware(hw).loaded_watts;
    }
    c["price_usd"] = price;
    c["power_w"] = power;
    std::string reason = cabling_problem(spec, catalog);
    if (reason.empty()) {
      try {
        engine::make_plan(scenario_of(q, spec), catalog, spec.strategy);
      } catch (const engine::PlanError& e) {
        reason = e.what();
      }
    }
    c["status"] = reason.empty() ? "simulated" : "dropped";
    if (!reason.empty())
      c["reason"] = reason;
    else
      to_simulate.push_back(static_cast<int>(i));
    candidates.push_back(c);
  }
  const auto results = run_items(static_cast<int>(to_simulate.size()), q.workers, [&](int k) {
    return simulate_candidate(q, specs[to_simulate[k]], catalog).dump();
  });
  for (std::size_t k = 0; k < to_simulate.size(); ++k) {
    json& c = candidates[to_simulate[k]];
    if (!results[k].ok) {
      c["status"] = "failed";
      c["reason"] = results[k].output;
      continue;
    }
    c["figures"] = json::parse(results[k].output);
    c["tokens_per_joule"] = c["figures"]["decode_tokens_per_s"].get<double>() / c["power_w"].get<double>();
  }
  out["candidates"] = candidates;
  rank(q, out);
  // What each added node buys, on the first hardware, link and plan asked; a shard leaves it to the merge.
  if (q.workers.merged || q.workers.shard.count == 1) {
    const Spec spec{std::vector<std::string>(q.max_nodes, q.hardware.front()), q.links.front(), q.strategies.front()};
    out["scaling"] = scaling_view(scenario_of(q, spec), spec.strategy, catalog, q.workers.jobs);
  }
  return out;
}

std::string scaling_subject(const json& plan) {
  const auto& q = plan["query"];
  return fmt::format("{} on {}, {}", q["model"].get<std::string>(), q["hardware"][0].get<std::string>(),
                     q["links"][0].get<std::string>());
}

std::string render_plan_table(const json& plan) {
  const auto& q = plan["query"];
  std::string out = "verdict: " + plan["verdict"].get<std::string>() + "\n";
  out += fmt::format("{}Workload: {}.\n", slo_text(q["slo_ttft_s"].get<double>(), q["slo_itl_s"].get<double>(), ". "),
                     q["workload"].get<std::string>());
  out += fmt::format("{:>4}  {:<44} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8}  {}\n", "#", "cluster / link / plan", "price",
                     "tok/s b1", "tok/s", "TTFT p99", "ITL p99", "N+1", "verdict");
  for (const auto& c : plan["candidates"]) {
    if (c["status"] != "simulated") continue;
    const auto& f = c["figures"];
    out += fmt::format("{:>4}  {:<44} {:>9.0f} {:>9.2f} {:>9.2f} {:>8.3f}s {:>8.1f}ms {:>8}  {}\n",
                       c["index"].get<int>(), describe_candidate(c), c["price_usd"].get<double>(),
                       f["decode_tokens_per_s_batch1"].get<double>(), f["decode_tokens_per_s"].get<double>(),
                       f["ttft_s"]["p99"].get<double>(), 1e3 * f["itl_s"]["p99"].get<double>(),
                       f["n_plus_1"]["tolerant"].get<bool>() ? "yes" : "no", c.value("verdict", ""));
  }
  int dropped = 0;
  for (const auto& c : plan["candidates"]) dropped += c["status"] != "simulated";
  out += fmt::format("{} candidates simulated, {} dropped or failed (reasons in plan.json)\n",
                     plan["candidates"].size() - dropped, dropped);
  if (plan.contains("scaling")) out += scaling_subject(plan) + ": " + engine::scaling_text(plan["scaling"]);
  return out;
}

std::string render_plan_markdown(const json& plan) {
  const auto& q = plan["query"];
  std::string out = fmt::format(
      "# Capacity plan: {} {}\n\n**Verdict:** {}.\n\n{}Workload: {}. Profile: {}; {} level.\n\n",
      q["model"].get<std::string>(), q["quant"].get<std::string>(), plan["verdict"].get<std::string>(),
      slo_text(q["slo_ttft_s"].get<double>(), q["slo_itl_s"].get<double>(), ". "), q["workload"].get<std::string>(),
      q["profile"].get<std::string>(), q["simulation_level"].get<std::string>());
  out +=
      "| # | cluster / link / plan | price USD | power W | decode tok/s (batch 1) | decode tok/s | prefill tok/s | "
      "TTFT p50/p99 s | ITL p50/p99 ms | KV tokens | tok/J | N+1 | verdict |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& c : plan["candidates"]) {
    if (c["status"] != "simulated") continue;
    const auto& f = c["figures"];
    const auto& n1 = f["n_plus_1"];
    const std::string tolerance = n1["tolerant"].get<bool>() ? fmt::format("yes: {:.0f} s to recover, {:.1f} tok/s",
                                                                           n1["recovery_s"].get<double>(),
                                                                           n1["decode_tokens_per_s"].get<double>())
                                                             : "no";
    out += fmt::format(
        "| {} | {} | {:.0f} | {:.0f} | {:.2f} | {:.2f} | {:.1f} | {:.3f}/{:.3f} | {:.1f}/{:.1f} | {:.0f} | {:.3f} | {} "
        "| {} |\n",
        c["index"].get<int>(), describe_candidate(c), c["price_usd"].get<double>(), c["power_w"].get<double>(),
        f["decode_tokens_per_s_batch1"].get<double>(), f["decode_tokens_per_s"].get<double>(),
        f["prefill_tokens_per_s"].get<double>(), f["ttft_s"]["p50"].get<double>(), f["ttft_s"]["p99"].get<double>(),
        1e3 * f["itl_s"]["p50"].get<double>(), 1e3 * f["itl_s"]["p99"].get<double>(),
        f["kv_capacity_tokens"].get<double>(), c["tokens_per_joule"].get<double>(), tolerance, c.value("verdict", ""));
  }
  out += "\n## Dropped\n\n| # | cluster / link / plan | reason |\n|---|---|---|\n";
  for (const auto& c : plan["candidates"])
    if (c["status"] != "simulated")
      out += fmt::format("| {} | {} | {} |\n", c["index"].get<int>(), describe_candidate(c), c["reason"].get<std::string>());
  if (plan.contains("scaling"))
    out += "\n## What each node buys: " + scaling_subject(plan) + "\n\n" + engine::scaling_markdown(plan["scaling"]);
  return out;
}

}  // namespace sim
