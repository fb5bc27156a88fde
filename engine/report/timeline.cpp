#include "engine/report/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/report/run_figures.hpp"

namespace engine {

namespace {

using nlohmann::ordered_json;

constexpr int kTimelineBuckets = 120;
constexpr double kUs = 1e6;

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

// Bytes on the cable from `from` to `to`, over time: what `from` sent to `to`
// itself, and what it forwarded to `to` for others on a detour.
ordered_json bytes_over_time(const RunResult& r, int from, int to) {
  std::vector<double> sums =
      per_bucket(r.nodes[from].steps, r.end_s, [to](const StepTrace& st) {
        return to < static_cast<int>(st.bytes_to.size()) ? static_cast<double>(st.bytes_to[to]) : 0.0;
      }).sums();
  const std::size_t on = static_cast<std::size_t>(from) * r.nodes.size() + static_cast<std::size_t>(to);
  for (const NodeResult& n : r.nodes) {
    if (on >= n.traffic.relayed.size() || n.traffic.relayed[on] == 0) continue;  // none of its detours crossed here
    const auto forwarded = per_bucket(n.steps, r.end_s, [on](const StepTrace& st) {
      return on < st.relayed.size() ? static_cast<double>(st.relayed[on]) : 0.0;
    });
    for (std::size_t i = 0; i < sums.size(); ++i) sums[i] += forwarded.sums()[i];
  }
  return whole(sums);
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

}  // namespace

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

ordered_json distributions_json(const RunResult& r) {
  const Latencies l = latencies(r);
  return {{"ttft_s", histogram(l.ttft)}, {"itl_s", histogram(l.itl)}};
}

namespace {

// 10^n, correctly rounded: 10^|n| is exact up to 10^22, and one division rounds once.
double exact_power_of_ten(int n) {
  double p = 1;
  for (int i = 0; i < std::abs(n); ++i) p *= 10;
  return n < 0 ? 1 / p : p;
}

}  // namespace

double nice_step(double raw) {
  // The decade below raw, from exact powers of ten (libm's log10 and pow differ by platform).
  int decade = 0;
  for (; decade < 300 && exact_power_of_ten(decade + 1) <= raw; ++decade) {
  }
  for (; decade > -300 && exact_power_of_ten(decade) > raw; --decade) {
  }
  const double magnitude = exact_power_of_ten(decade);
  for (double m : {1.0, 2.0, 5.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10 * magnitude;
}

}  // namespace engine
