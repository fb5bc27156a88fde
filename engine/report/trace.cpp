#include "engine/report/trace.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "engine/report/run_figures.hpp"

namespace engine {

namespace {

using nlohmann::json;

constexpr double kUs = 1e6;  // trace timestamps are in microseconds
constexpr int kNodesPid = 1, kLinksPid = 2, kRequestsPid = 3, kFaultsPid = 4;

json metadata(const char* what, int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

json complete(const std::string& name, int pid, int tid, double start_s, double end_s, json args) {
  return {{"ph", "X"},
          {"name", name},
          {"pid", pid},
          {"tid", tid},
          {"ts", start_s * kUs},
          {"dur", (end_s - start_s) * kUs},
          {"args", std::move(args)}};
}
}  // namespace

json render_trace(const Scenario& s, const Plan& plan, const RunResult& r) {
  json events = json::array();
  events.push_back(metadata("process_name", kNodesPid, 0, fmt::format("nodes ({})", to_string(plan.strategy))));
  for (std::size_t i = 0; i < s.nodes.size(); ++i)
    events.push_back(metadata("thread_name", kNodesPid, static_cast<int>(i), s.nodes[i].name));
  events.push_back(metadata("process_name", kLinksPid, 0, "links"));
  for (std::size_t i = 0; i < s.fabric.cables.size(); ++i) {
    const Cable& c = s.fabric.cables[i];
    events.push_back(
        metadata("thread_name", kLinksPid, static_cast<int>(i), link_label(s.nodes[c.a].name, s.nodes[c.b].name)));
  }
  events.push_back(metadata("process_name", kRequestsPid, 0, "requests"));
  events.push_back(metadata("thread_name", kRequestsPid, 0, "first tokens"));
  events.push_back(metadata("process_name", kFaultsPid, 0, "faults and recovery"));
  // Global instants for every fault and engine decision; a span per recovery phase.
  for (const RunEvent& e : r.events)
    events.push_back({{"ph", "i"},
                      {"s", "g"},
                      {"cat", "fault"},
                      {"name", e.kind + (e.target.empty() ? "" : " " + e.target)},
                      {"pid", kFaultsPid},
                      {"tid", 0},
                      {"ts", e.t_s * kUs},
                      {"args", {{"detail", e.detail}}}});
  for (const auto& phase : recovery_phases(r))
    events.push_back(complete("recovering " + phase["target"].get<std::string>(), kFaultsPid, 0,
                              phase["start_s"].get<double>(),
                              phase["end_s"].is_null() ? r.end_s : phase["end_s"].get<double>(), json::object()));

  for (std::size_t rank = 0; rank < r.nodes.size(); ++rank) {
    for (const StepTrace& st : r.nodes[rank].steps) {
      events.push_back(
          complete("step", kNodesPid, static_cast<int>(rank), st.start_s, st.end_s,
                   {{"compute_ms", st.compute_s * 1e3}, {"comm_ms", st.comm_s * 1e3}, {"tokens", st.tokens}}));
    }
  }
  for (std::size_t i = 0; i < s.fabric.cables.size(); ++i) {
    const Cable& c = s.fabric.cables[i];
    events.push_back(complete("traffic (whole run)", kLinksPid, static_cast<int>(i), 0, r.end_s,
                              {{"link", c.link},
                               {"bytes_a_to_b", bytes_between(r, c.a, c.b)},
                               {"bytes_b_to_a", bytes_between(r, c.b, c.a)}}));
  }
  for (const RequestRecord& rec : r.requests) {
    if (rec.arrival_s < 0) continue;  // never arrived: no span to draw
    const int id = rec.request.id;
    const std::string name = fmt::format("req {}", id);
    // A failed request's failure time is not recorded: end at its last sign of life.
    const double end = rec.finish_s >= 0         ? rec.finish_s
                       : rec.token_times.empty() ? rec.arrival_s
                                                 : rec.token_times.back();
    const auto async = [&](const char* ph, double t) {
      return json{{"ph", ph}, {"cat", "request"}, {"id", id}, {"name", name}, {"pid", kRequestsPid},
                  {"tid", 0}, {"ts", t * kUs}};
    };
    json begin = async("b", rec.arrival_s);
    begin["args"] = {{"prompt_tokens", rec.request.prompt_tokens},
                     {"output_tokens", rec.request.output_tokens},
                     {"status", completed(rec) ? "completed" : "failed"},
                     {"error", rec.error}};
    events.push_back(std::move(begin));
    if (rec.first_token_s >= 0) {
      events.push_back({{"ph", "i"},
                        {"s", "t"},
                        {"cat", "request"},
                        {"name", name + " first token"},
                        {"pid", kRequestsPid},
                        {"tid", 0},
                        {"ts", rec.first_token_s * kUs}});
    }
    events.push_back(async("e", end));
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

}  // namespace engine
