#include "engine/report/run_figures.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "engine/base/enums.hpp"

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
  std::uint64_t bytes = to < static_cast<int>(sent.size()) ? sent[to] : 0;
  const std::size_t on = static_cast<std::size_t>(from) * r.nodes.size() + static_cast<std::size_t>(to);
  for (const NodeResult& n : r.nodes)  // what `from` forwarded to `to` on others' detours
    if (on < n.traffic.relayed.size()) bytes += n.traffic.relayed[on];
  return bytes;
}

bool injected(const RunEvent& e) { return parse_name<FaultKind>(e.kind).has_value(); }

double out_of_service_s(const RunResult& r) {
  double total = 0, fault = -1, down_since = -1;
  for (const RunEvent& e : r.events) {
    if (down_since < 0 && injected(e)) {
      fault = e.t_s;
    } else if (e.kind == "detected" && down_since < 0) {
      down_since = fault >= 0 ? fault : e.t_s;
    } else if (e.kind == "recovered" && down_since >= 0) {
      total += e.t_s - down_since;
      down_since = fault = -1;
    } else if (e.kind == "instance-failed") {
      if (down_since < 0) down_since = e.t_s;
      break;  // the instance is gone: nothing is served after
    }
  }
  return down_since >= 0 ? total + std::max(0.0, r.end_s - down_since) : total;
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

std::string seconds_or_never(const nlohmann::ordered_json& seconds) {
  return seconds.is_null() ? std::string("never") : fmt::format("{:.3f} s", seconds.get<double>());
}

std::string downtime_text(const nlohmann::ordered_json& link) {
  if (!link.contains("down")) return "";
  const auto& down = link.at("down");
  const double from_s = down.front().at("from_s").get<double>();
  const bool ends_down = down.back().at("to_s").is_null();
  if (down.size() > 1)
    return fmt::format("down {} times from {:.2f} s{}", down.size(), from_s,
                       ends_down ? ", still down at the end" : "");
  return ends_down ? fmt::format("down at {:.2f} s", from_s)
                   : fmt::format("down {:.2f}–{:.2f} s", from_s, down.front().at("to_s").get<double>());
}

std::string recovery_time(const nlohmann::ordered_json& faults) {
  if (faults.at("time_to_recover_s").is_null()) return "never (not serving again by the end)";
  return fmt::format("{:.3f} s (serving again {:.3f} s after the detection)", faults.at("downtime_s").get<double>(),
                     faults.at("time_to_recover_s").get<double>());
}

}  // namespace engine
