#include "engine/report/run_figures.hpp"

namespace engine {

bool completed(const RequestRecord& rec) { return rec.error.empty() && rec.finish_s >= 0; }

double ratio(double num, double den) { return den > 0 ? num / den : 0; }

Latencies latencies(const RunResult& r) {
  Latencies l;
  for (const RequestRecord& rec : r.requests) {
    const auto& t = rec.token_times;
    for (std::size_t i = 1; i < t.size(); ++i) l.itl.push_back(t[i] - t[i - 1]);
    if (completed(rec)) l.ttft.push_back(rec.first_token_s - rec.arrival_s);
  }
  return l;
}

std::uint64_t bytes_between(const RunResult& r, int from, int to) {
  const auto& sent = r.nodes[from].traffic.bytes_to;
  return to < static_cast<int>(sent.size()) ? sent[to] : 0;
}

std::string link_label(const std::string& a, const std::string& b) { return a + "<->" + b; }

nlohmann::ordered_json recovery_phases(const RunResult& r) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < r.events.size(); ++i) {
    const RunEvent& e = r.events[i];
    if (e.kind != "detected" || (!out.empty() && out.back()["end_s"].is_null())) continue;
    nlohmann::ordered_json phase{{"kind", "recovery"}, {"target", e.target}, {"start_s", e.t_s}, {"end_s", nullptr}};
    for (std::size_t j = i + 1; j < r.events.size(); ++j)
      if (r.events[j].kind == "recovered" || r.events[j].kind == "instance-failed") {
        phase["end_s"] = r.events[j].t_s;
        break;
      }
    if (!out.empty() && out.back()["end_s"] == phase["end_s"]) continue;  // the same recovery, noticed twice
    out.push_back(phase);
  }
  return out;
}

}  // namespace engine
