// Figures of a run that more than one output reads (report.json, report.md,
// trace.json), so each is worked out in one place.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/node/run_result.hpp"

namespace engine {

// A request that finished without an error.
bool completed(const RequestRecord& rec);

// `num / den`, 0 when there is nothing to divide by.
double ratio(double num, double den);

struct Latencies {
  std::vector<double> ttft, itl;  // ttft: completed requests; itl: every request's gaps
};
Latencies latencies(const RunResult& r);

// Bytes rank `from` sent to rank `to` (a node that never sent has no counters).
std::uint64_t bytes_between(const RunResult& r, int from, int to);

// "a<->b": how a cable is named in the Markdown tables and the trace.
std::string link_label(const std::string& a, const std::string& b);

// A fault the scenario injected (not what the engine did about it).
bool injected(const RunEvent& e);

// Seconds the cluster could not serve: from the last fault injected before
// each detection until the recovery that followed, or to the end of the run
// when none did (fail-stop gave up, or the run ended first).
double out_of_service_s(const RunResult& r);

// From each detection to the recovery (or the instance's end) that followed
// it: [{kind, target, start_s, end_s}], end_s null when the run ended first.
nlohmann::ordered_json recovery_phases(const RunResult& r);

// A report's time in seconds ("0.605 s"), or "never" where it is null.
std::string seconds_or_never(const nlohmann::ordered_json& seconds);
// When a cable of a report's "links" was down, in the words every output uses
// ("down at 5.00 s", "down 5.00–7.00 s", "down 3 times from 5.00 s, still down
// at the end"); "" when it never was.
std::string downtime_text(const nlohmann::ordered_json& link);
// The recovery time of a report's "faults", in the words every output uses:
// "0.607 s (serving again 0.002 s after the detection)", or "never (...)".
std::string recovery_time(const nlohmann::ordered_json& faults);

}  // namespace engine
