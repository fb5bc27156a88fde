#include "session/run_session.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "engine/base/error.hpp"
#include "engine/input/scenario_file.hpp"
#include "engine/report/bottleneck.hpp"
#include "engine/report/expectations.hpp"
#include "engine/report/junit.hpp"
#include "engine/report/report.hpp"
#include "engine/report/run_figures.hpp"
#include "engine/report/trace.hpp"
#include "session/output_file.hpp"

namespace session {

namespace {

// A real run whose requests failed, where no expectation says how many may: why that is a breach, else "".
std::string unexpected_failures(const engine::Scenario& s, const nlohmann::ordered_json& report) {
  const int failed = report["summary"]["requests"]["failed"].get<int>();
  if (failed == 0) return "";
  for (const auto& e : s.expectations)
    if (e.metric == "failed_requests" || e.metric == "completed_requests" || e.metric == "request_success") return "";
  std::string first_cause;
  for (const auto& r : report["requests"])
    if (r["status"] == "failed") {
      first_cause = r["error"].get<std::string>();
      break;
    }
  return fmt::format(
      "{} of {} requests failed (the first: {}); the scenario's expectations do not say any may "
      "(give \"failed_requests\" in its \"expect\" block if they may)",
      failed, report["summary"]["requests"]["total"].get<int>(), first_cause);
}

// What a real run did, in one line.
std::string outcome(const nlohmann::ordered_json& report, int status) {
  const auto& sum = report["summary"];
  const auto& req = sum["requests"];
  std::string line = fmt::format("{} of {} requests completed", req["completed"].get<int>(), req["total"].get<int>());
  if (const int failed = req["failed"].get<int>(); failed > 0) line += fmt::format(", {} failed", failed);
  const auto& faults = report["faults"];
  if (const int injected = faults["injected"].get<int>(); injected > 0)
    line += fmt::format("; {} fault(s), detected after {}, recovery time {}", injected,
                        engine::seconds_or_never(faults["time_to_detect_s"]), engine::recovery_time(faults));
  line += fmt::format("; over {}, {:.2f} s elapsed; {}", report["transport"].get<std::string>(),
                      sum["simulated_s"].get<double>(), status == 0 ? "as expected" : "expectations not met");
  return line;
}

}  // namespace

RunSession open_session(const std::string& scenario_file, const std::vector<std::string>& card_files,
                        std::optional<unsigned long long> seed, std::optional<engine::SimulationLevel> level) {
  RunSession l{engine::Catalog::builtin(), {}, {}, {}, {}};
  for (const auto& card : card_files) l.catalog.add_card_file(card);
  l.scenario = engine::load_scenario(scenario_file, l.catalog);
  if (seed) l.scenario.seed = *seed;
  if (level) l.scenario.level = *level;
  l.catalog = engine::catalog_for(l.scenario, l.catalog);
  l.profile = engine::StackProfile::load(l.catalog.dir(), l.scenario.profile);
  return l;
}

engine::Plan plan_for(const RunSession& s, std::optional<engine::Strategy> chosen) {
  if (s.scenario.parallelism && chosen && *chosen != *s.scenario.parallelism)
    throw engine::InputError(s.scenario.file, "/parallelism",
                             fmt::format("the scenario says {}, but this rank was told to run {}",
                                         engine::to_string(*s.scenario.parallelism), engine::to_string(*chosen)));
  if (s.scenario.parallelism) chosen = s.scenario.parallelism;
  if (!chosen)
    throw engine::InputError(s.scenario.file, "/parallelism",
                             "\"auto\" is chosen by simulation; give the parallelism it chose (launch does)");
  return engine::make_plan(s.scenario, s.catalog, *chosen);
}

int report_run(const RunSession& l, const engine::RunResult& result, const std::string& out_dir,
               const std::string& transport, const std::string& junit_file) {
  const engine::Scenario& s = l.scenario;
  const bool real = !transport.empty();
  const std::string clock = real ? "elapsed" : "simulated";
  auto report = engine::build_report(s, l.catalog, l.plan, l.profile.name, result, s.seed);
  report["clock"] = clock;  // the renderers say "simulated time" or "elapsed time (real processes)"
  if (real) report["transport"] = transport;
  if (!l.scaling.is_null()) report["bottleneck"]["scaling"] = l.scaling;
  const auto checks = engine::check_expectations(s, report);
  const std::string dir = out_dir.empty() ? "reports/out/" + s.name : out_dir;
  engine::write_reports(dir, report, engine::render_trace(s, l.plan, result));
  if (!junit_file.empty()) {
    const auto suite = engine::run_junit_suite(s, s.seed, checks, engine::check_invariants(s, result));
    write_text_file(junit_file, engine::render_junit("meshinfer run " + s.name, {suite}));
  }

  const auto& sum = report["summary"];
  fmt::print(
      "{}: decode {:.2f} tok/s, prefill {:.1f} tok/s, TTFT p50 {:.3f} s p99 {:.3f} s, ITL p50 {:.2f} ms, "
      "requests {} completed / {} failed, {} {:.2f} s\n",
      s.name, sum["decode_tokens_per_s"].get<double>(), sum["prefill_tokens_per_s"].get<double>(),
      sum["ttft_s"]["p50"].get<double>(), sum["ttft_s"]["p99"].get<double>(), 1e3 * sum["itl_s"]["p50"].get<double>(),
      sum["requests"]["completed"].get<int>(), sum["requests"]["failed"].get<int>(), clock,
      sum["simulated_s"].get<double>());
  if (const auto& decode = report["bottleneck"]["decode"]; !decode.is_null())
    fmt::print("one decode token on {}: {}\n", decode["node"].get<std::string>(), engine::terms_line(decode));
  if (!l.scaling.is_null()) fmt::print("{}", engine::scaling_text(l.scaling));
  fmt::print("reports: {0}/report.json {0}/report.md {0}/report.html {0}/trace.json{1}\n", dir,
             junit_file.empty() ? "" : " " + junit_file);
  int status = 0;
  for (const auto& c : checks) {
    if (c.pass) continue;
    fmt::print(stderr, "{}\n", engine::describe_breach(c));
    status = kExitBreach;
  }
  for (const auto& violation : report["invariants"]) {
    fmt::print(stderr, "invariant violated: {}\n", violation.get<std::string>());
    status = kExitBreach;
  }
  const auto& faults = report["faults"];
  if (faults["injected"].get<int>() > 0) {
    fmt::print("faults: {} injected, detected after {}, recovery time {}, {} tokens recomputed\n",
               faults["injected"].get<int>(), engine::seconds_or_never(faults["time_to_detect_s"]), engine::recovery_time(faults),
               faults["tokens_recomputed"].get<long>());
  }
  if (const int late = faults["not_applied"].get<int>(); late > 0)
    fmt::print("faults: {} due after the run ended at {:.3f} s, not applied\n", late,
               report["summary"]["simulated_s"].get<double>());
  if (!real) return status;
  if (const std::string why = unexpected_failures(s, report); !why.empty()) {
    fmt::print(stderr, "{}\n", why);
    status = kExitBreach;
  }
  fmt::print("{}{}\n", engine::kOutcomePrefix, outcome(report, status));
  std::fflush(stdout);
  return status;
}

}  // namespace session
