#include "engine/report/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "engine/base/error.hpp"

namespace engine {

namespace {

using nlohmann::json;

// One report and where it came from, so every refusal names the file and the key.
class Report {
 public:
  Report(const json& j, const std::string& file) : j_(j), file_(file) {
    if (at("/schema") != "meshinfer.report/1") fail("/schema", "is not meshinfer.report/1");
  }

  const json& at(const std::string& pointer) const {
    const json::json_pointer p(pointer);
    if (!j_.contains(p)) fail(pointer, "missing: not a meshinfer report, or one older than this build");
    return j_.at(p);
  }
  std::optional<double> seconds(const std::string& pointer) const {
    const json& v = at(pointer);
    if (v.is_null()) return std::nullopt;
    return number(pointer);
  }
  double number(const std::string& pointer) const {
    const json& v = at(pointer);
    if (!v.is_number()) fail(pointer, "must be a number");
    return v.get<double>();
  }
  [[noreturn]] void fail(const std::string& pointer, const std::string& why) const {
    throw InputError(file_, pointer, why);
  }

 private:
  const json& j_;
  const std::string& file_;
};

std::string decision_text(const json& e) {
  const std::string target = e.at("target").get<std::string>();
  return fmt::format("{}{}: {}", e.at("kind").get<std::string>(), target.empty() ? "" : " " + target,
                     e.at("detail").get<std::string>());
}

// What the engine decided about the faults, in order: recoveries and the instance's end.
std::vector<std::string> decisions(const Report& r) {
  std::vector<std::string> out;
  for (const json& e : r.at("/events"))
    if (e.at("kind") == "recovered" || e.at("kind") == "instance-failed") out.push_back(decision_text(e));
  return out;
}

int epochs(const Report& r) {
  const json& events = r.at("/events");
  return static_cast<int>(
      std::count_if(events.begin(), events.end(), [](const json& e) { return e.at("kind") == "detected"; }));
}

std::map<long, const json*> requests_by_id(const Report& r) {
  std::map<long, const json*> out;
  for (const json& q : r.at("/requests")) out[q.at("id").get<long>()] = &q;
  return out;
}

std::string outcome(const json* q) {
  if (!q) return "absent";
  return fmt::format("{}, {} tokens", q->at("status").get<std::string>(), q->at("tokens").get<long>());
}

// The first position where two requests' computed token ids differ; -1 when
// they agree or either run did not compute them. `prefix_only`: only where both have ids.
long first_different_id(const json* a, const json* b, bool prefix_only) {
  if (!a || !b || !a->contains("output_ids") || !b->contains("output_ids")) return -1;
  const auto x = a->at("output_ids").get<std::vector<long>>(), y = b->at("output_ids").get<std::vector<long>>();
  const auto [ia, ib] = std::mismatch(x.begin(), x.end(), y.begin(), y.end());
  const bool agree = prefix_only ? ia == x.end() || ib == y.end() : ia == x.end() && ib == y.end();
  return agree ? -1 : static_cast<long>(ia - x.begin());
}

bool failed(const json* q) { return q && q->at("status") == "failed"; }

void exact(std::vector<CompareRow>& rows, const std::string& what, const std::string& a, const std::string& b) {
  rows.push_back({what, a, b, "exact", a == b});
}

void request_rows(std::vector<CompareRow>& rows, const Report& a, const Report& b) {
  const auto in_a = requests_by_id(a), in_b = requests_by_id(b);
  std::map<long, std::pair<const json*, const json*>> both;
  for (const auto& [id, q] : in_a) both[id].first = q;
  for (const auto& [id, q] : in_b) both[id].second = q;
  for (const auto& [id, pair] : both) {
    CompareRow row{fmt::format("request {}", id), outcome(pair.first), outcome(pair.second), "exact", false};
    // A fault cuts a request off at a time, so how far it got is a timing:
    // two failed runs must agree on the tokens both produced, not on their count.
    const bool cut_in_both = failed(pair.first) && failed(pair.second);
    const long differs = first_different_id(pair.first, pair.second, cut_in_both);
    row.agree = (cut_in_both || row.a == row.b) && differs < 0;
    if (cut_in_both) row.tolerance = "failed in both; tokens on their common prefix";
    if (differs >= 0) row.b += fmt::format(" (token ids differ from position {})", differs);
    rows.push_back(row);
  }
}

std::string seconds_text(const std::optional<double>& s) { return s ? fmt::format("{:.3f} s", *s) : "never"; }

void within_seconds(std::vector<CompareRow>& rows, const std::string& what, const std::optional<double>& a,
                    const std::optional<double>& b, double tolerance_s, const std::string& why) {
  const bool agree = a && b ? std::abs(*a - *b) <= tolerance_s : !a && !b;
  rows.push_back({what, seconds_text(a), seconds_text(b), fmt::format("±{:.3f} s ({})", tolerance_s, why), agree});
}

void within_ratio(std::vector<CompareRow>& rows, const std::string& what, double a, double b, double relative,
                  const std::string& unit, double scale) {
  const bool agree = std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b));
  rows.push_back({what, fmt::format("{:.2f} {}", a * scale, unit), fmt::format("{:.2f} {}", b * scale, unit),
                  fmt::format("±{:.0f}%", 100 * relative), agree});
}

}  // namespace

std::vector<CompareRow> compare_reports(const json& ja, const std::string& file_a, const json& jb,
                                        const std::string& file_b, const CompareOptions& o) {
  const Report a(ja, file_a), b(jb, file_b);
  std::vector<CompareRow> rows;
  exact(rows, "scenario", a.at("/scenario/name").get<std::string>(), b.at("/scenario/name").get<std::string>());
  exact(rows, "link cards", a.at("/link_cards").dump(), b.at("/link_cards").dump());
  const double beat_a = a.number("/scenario/recovery/heartbeat_s"), beat_b = b.number("/scenario/recovery/heartbeat_s");
  exact(rows, "heartbeat", fmt::format("{} s", beat_a), fmt::format("{} s", beat_b));
  exact(rows, "faults injected", a.at("/faults/injected").dump(), b.at("/faults/injected").dump());

  request_rows(rows, a, b);
  exact(rows, "requests completed", a.at("/summary/requests/completed").dump(),
        b.at("/summary/requests/completed").dump());
  exact(rows, "requests failed", a.at("/summary/requests/failed").dump(), b.at("/summary/requests/failed").dump());

  exact(rows, "epochs (detections)", std::to_string(epochs(a)), std::to_string(epochs(b)));
  const auto da = decisions(a), db = decisions(b);
  for (std::size_t i = 0; i < std::max(da.size(), db.size()); ++i)
    exact(rows, fmt::format("decision {}", i + 1), i < da.size() ? da[i] : "none", i < db.size() ? db[i] : "none");

  // Detection is due within the timeout and one beat of the fault, whether it
  // comes from a closed connection at once or from silence: two correct
  // detectors differ by up to that much. A recovery's own steps are beats.
  const double beat = std::max(beat_a, beat_b);
  const double timeout =
      std::max(a.number("/scenario/recovery/heartbeat_timeout_s"), b.number("/scenario/recovery/heartbeat_timeout_s"));
  within_seconds(rows, "detection", a.seconds("/faults/time_to_detect_s"), b.seconds("/faults/time_to_detect_s"),
                 timeout + beat, "timeout + 1 heartbeat");
  within_seconds(rows, "recovery", a.seconds("/faults/time_to_recover_s"), b.seconds("/faults/time_to_recover_s"),
                 2 * beat, "2 heartbeats");
  within_seconds(rows, "downtime", a.seconds("/faults/downtime_s"), b.seconds("/faults/downtime_s"), timeout + 3 * beat,
                 "detection + recovery");

  within_ratio(rows, "decode", a.number("/summary/decode_tokens_per_s"), b.number("/summary/decode_tokens_per_s"),
               o.relative, "tok/s", 1);
  within_ratio(rows, "prefill", a.number("/summary/prefill_tokens_per_s"), b.number("/summary/prefill_tokens_per_s"),
               o.relative, "tok/s", 1);
  within_ratio(rows, "TTFT p50", a.number("/summary/ttft_s/p50"), b.number("/summary/ttft_s/p50"), o.relative, "ms",
               1e3);
  within_ratio(rows, "ITL p50", a.number("/summary/itl_s/p50"), b.number("/summary/itl_s/p50"), o.relative, "ms", 1e3);
  return rows;
}

std::string render_comparison(const std::vector<CompareRow>& rows, const std::string& file_a,
                              const std::string& file_b) {
  std::string out = fmt::format("A: {}\nB: {}\n\n| | A | B | tolerance | |\n|---|---|---|---|---|\n", file_a, file_b);
  int differ = 0;
  for (const CompareRow& r : rows) {
    differ += !r.agree;
    out += fmt::format("| {} | {} | {} | {} | {} |\n", r.what, r.a, r.b, r.tolerance, r.agree ? "ok" : "DIFFERS");
  }
  out += differ == 0 ? fmt::format("\nthe runs agree ({} rows)\n", rows.size())
                     : fmt::format("\n{} of {} rows differ\n", differ, rows.size());
  return out;
}

}  // namespace engine
