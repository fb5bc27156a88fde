// meshinfer doctor: the first command on a new cluster. Gathers every host's
// facts over ssh (or --exec-prefix), checks them together, probes each cable,
// and prints every finding with the host, port or cable and the fix.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/load_for_run.hpp"
#include "cli/run_cli.hpp"
#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"
#include "hw/doctor/checks.hpp"
#include "hw/doctor/gather.hpp"
#include "hw/launcher.hpp"
#include "hw/os.hpp"
#include "session/output_file.hpp"

namespace cli {

namespace {

namespace doc = hw::doctor;

struct DoctorOptions {
  std::string cluster, scenario, json_out, bundle_out, exec_prefix;
  double timeout_s = 60;
  bool facts = false, no_probe = false;
};

std::string last_line(const std::string& text) {
  const auto end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  const auto start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// Why rank r's command gave nothing usable, from how it ended.
std::string failure(const hw::LaunchResult& res, int r, double timeout_s) {
  if (res.timed_out && res.status[r] == 128 + 9) return fmt::format("no answer within {:g} s", timeout_s);
  const std::string said = last_line(res.errors[r]);
  return fmt::format("ended with status {}{}", res.status[r], said.empty() ? "" : ": " + said);
}

doc::ClusterFacts gather(const hw::ClusterSpec& c, const DoctorOptions& o) {
  std::vector<std::vector<std::string>> commands;
  for (int r = 0; r < c.world(); ++r)
    commands.push_back(hw::rank_command(c, r, o.exec_prefix, {hw::self_executable(), "doctor", "--facts"}));
  const hw::LaunchResult res = hw::launch_processes(commands, o.timeout_s, true);
  doc::ClusterFacts f{c, std::vector<std::optional<doc::HostFacts>>(c.world()), std::vector<std::string>(c.world())};
  for (int r = 0; r < c.world(); ++r) {
    if (res.status[r] != 0) {
      f.unreachable[r] = failure(res, r, o.timeout_s);
      continue;
    }
    try {
      f.hosts[r] = doc::facts_from_json(nlohmann::json::parse(res.output[r]));
    } catch (const std::exception& e) {
      f.unreachable[r] = fmt::format("answered, but not with its facts ({})", e.what());
    }
  }
  return f;
}

// Every pair probed once over the cluster's transport; nullopt (and the finding) when the probe failed.
std::optional<std::vector<hw::PairFigures>> run_probe(const doc::ClusterFacts& f, const DoctorOptions& o,
                                                      std::vector<doc::Finding>& failed) {
  const auto& c = f.cluster;
  std::vector<std::vector<std::string>> commands;
  for (int r = 0; r < c.world(); ++r)
    commands.push_back(
        hw::rank_command(c, r, o.exec_prefix,
                         {hw::self_executable(), "probe", "--rank", std::to_string(r), "--cluster", o.cluster,
                          "--pings", "20", "--repeats", "3", "--figures-json", "--secret-stdin"}));
  // The probe's ranks prove membership like a run's: the secret on their stdin, never a command line.
  const hw::LaunchResult res = hw::launch_processes(commands, o.timeout_s, true, {}, hw::secret_for_run(c) + "\n");
  for (int r = 0; r < c.world(); ++r) {
    if (res.status[r] == 0) continue;
    failed.push_back({"probe", f.name(r), false, "the probe failed: " + failure(res, r, o.timeout_s),
                      "fix the findings above, then check that the cluster file's port is free on every host"});
    return std::nullopt;
  }
  try {
    return hw::figures_from_json(nlohmann::json::parse(res.output[0]));
  } catch (const std::exception& e) {
    failed.push_back({"probe", f.name(0), false, fmt::format("rank 0 printed no figures ({})", e.what()), ""});
    return std::nullopt;
  }
}

struct ProbeOutcome {
  std::vector<doc::Finding> findings;
  std::optional<std::vector<hw::PairFigures>> figures;  // the first probe's, when it ran
};

// An outlier must stand out in two probes: one probe on a busy machine can be unlucky.
ProbeOutcome probe(const doc::ClusterFacts& f, const DoctorOptions& o, std::optional<double> card_gbps) {
  std::vector<doc::Finding> failed;
  const auto first = run_probe(f, o, failed);
  if (!first) return {failed, std::nullopt};
  auto findings = doc::check_probe(f, *first, card_gbps);
  if (std::all_of(findings.begin(), findings.end(), [](const doc::Finding& x) { return x.ok; }))
    return {findings, first};
  const auto second = run_probe(f, o, failed);
  if (!second) return {failed, first};
  const auto again = doc::check_probe(f, *second, card_gbps);
  for (std::size_t k = 0; k < findings.size() && k < again.size(); ++k)
    if (again[k].ok) findings[k] = again[k];
  return {findings, first};
}

// Each host's `rdma-check` verdicts on the devices its "rdma" row names, or why it gave none.
nlohmann::json rdma_conformance(const hw::ClusterSpec& c, const DoctorOptions& o) {
  std::vector<std::vector<std::string>> commands;
  for (int r = 0; r < c.world(); ++r)
    commands.push_back(hw::rank_command(
        c, r, o.exec_prefix,
        {hw::self_executable(), "rdma-check", "--cluster", o.cluster, "--rank", std::to_string(r), "--json", "-"}));
  const hw::LaunchResult res = hw::launch_processes(commands, o.timeout_s, true);
  nlohmann::json hosts = nlohmann::json::array();
  for (int r = 0; r < c.world(); ++r) {
    // A rule that differs makes rdma-check exit 1, and that verdict is what the bundle is for.
    const auto verdicts = nlohmann::json::parse(res.output[r], nullptr, false);
    hosts.push_back(verdicts.is_object() ? verdicts
                                         : nlohmann::json{{"rank", r}, {"error", failure(res, r, o.timeout_s)}});
  }
  return hosts;
}

// One file for a team to send back: the findings, every host's facts (versions, system, ports, devices), the
// link card the probe measured and, over rdma, each host's RDMA conformance. The cluster's secret stays out.
void write_bundle(const DoctorOptions& o, const hw::ClusterSpec& cluster, const nlohmann::json& findings,
                  const nlohmann::json& hosts, const std::optional<std::vector<hw::PairFigures>>& figures) {
  nlohmann::json cluster_file = engine::load_json(o.cluster);
  if (cluster_file.is_object()) cluster_file.erase("secret");
  nlohmann::json card;  // null when nothing was probed
  if (figures)
    card = hw::link_card("doctor-probed", *figures, "thunderbolt", cluster.frame_bytes(), cluster.frame_header_bytes());
  const nlohmann::json bundle = {{"tool", "meshinfer doctor --bundle"},
                                 {"meshinfer", version_line()},
                                 {"cluster", cluster_file},
                                 {"findings", findings},
                                 {"hosts", hosts},
                                 {"link_card", card},
                                 {"rdma_check", cluster.transport == "rdma" ? rdma_conformance(cluster, o) : nullptr}};
  session::write_text_file(o.bundle_out, bundle.dump(2) + "\n");
  fmt::print("bundle: {} (send it back: it corrects the simulator's cards)\n", o.bundle_out);
}

void print(const doc::Finding& x) {
  fmt::print("{} {:<10} {}: {}\n", x.ok ? "PASS" : "FAIL", x.check, x.subject, x.what);
  if (!x.ok && !x.fix.empty()) fmt::print("     {:<10} fix: {}\n", "", x.fix);
}

int doctor(const DoctorOptions& o) {
  if (o.facts) {
    fmt::print("{}\n", doc::to_json(doc::gather_host_facts(version_line())).dump());
    return 0;
  }
  if (o.cluster.empty()) throw engine::InputError("doctor", "", "give --cluster FILE");
  const hw::ClusterSpec cluster = hw::load_cluster(o.cluster);
  std::optional<session::RunSession> scenario;
  if (!o.scenario.empty()) scenario = load_for_run(o.scenario, {}, std::nullopt, false);
  const doc::ClusterFacts f = gather(cluster, o);
  std::vector<doc::Finding> all = doc::check_reach(f, version_line());
  for (auto&& part : {doc::check_cabling(f), doc::check_rdma(f), doc::check_link_speed(f)})
    all.insert(all.end(), part.begin(), part.end());
  const bool healthy = std::all_of(all.begin(), all.end(), [](const doc::Finding& x) { return x.ok; });
  std::optional<double> card_gbps;
  if (scenario) card_gbps = scenario->catalog.link(scenario->scenario.fabric.link).bandwidth * 8 / 1e9;
  std::optional<std::vector<hw::PairFigures>> figures;
  if (!o.no_probe && healthy) {
    ProbeOutcome probed = probe(f, o, card_gbps);
    all.insert(all.end(), probed.findings.begin(), probed.findings.end());
    figures = std::move(probed.figures);
  } else if (!o.no_probe) {
    all.push_back({"probe", "every cable", false, "not probed: the checks above failed", "fix them, then run again"});
  }
  if (scenario) {
    const auto memory = doc::check_memory(f, scenario->plan);
    all.insert(all.end(), memory.begin(), memory.end());
  }
  int failed = 0;
  nlohmann::json report = nlohmann::json::array();
  for (const auto& x : all) {
    print(x);
    failed += !x.ok;
    report.push_back({{"check", x.check}, {"subject", x.subject}, {"ok", x.ok}, {"what", x.what}, {"fix", x.fix}});
  }
  fmt::print("doctor: {} of {} checks failed\n", failed, all.size());
  nlohmann::json hosts = nlohmann::json::array();
  for (int r = 0; r < cluster.world(); ++r) hosts.push_back(f.hosts[r] ? doc::to_json(*f.hosts[r]) : nlohmann::json());
  if (!o.json_out.empty())
    session::write_text_file(o.json_out, nlohmann::json{{"findings", report}, {"hosts", hosts}}.dump(2) + "\n");
  if (!o.bundle_out.empty()) write_bundle(o, cluster, report, hosts, figures);
  return failed == 0 ? 0 : kExitBreach;
}

}  // namespace

void add_doctor_command(CLI::App& app, int& status) {
  auto o = std::make_shared<DoctorOptions>();
  auto* cmd = app.add_subcommand("doctor", "check a cluster's hosts, cabling, RDMA devices and memory before a run");
  cmd->add_option("--cluster", o->cluster, "cluster file (MLX hostfile)");
  cmd->add_option("--scenario", o->scenario, "also check each host's free memory against its shard of this scenario");
  cmd->add_option("--json", o->json_out, "also write the findings and every host's facts to this file");
  cmd->add_option("--bundle", o->bundle_out,
                  "also write one file to send back: findings, facts, the probed link card, RDMA conformance");
  cmd->add_option("--exec-prefix", o->exec_prefix,
                  "instead of ssh, reach each host under this command ({rank}, {host} replaced)");
  cmd->add_option("--timeout", o->timeout_s, "seconds each host has to answer, and the probe to finish");
  cmd->add_flag("--no-probe", o->no_probe, "skip the probe of each cable");
  cmd->add_flag("--facts", o->facts, "print this host's facts as JSON (what doctor runs on each host)");
  cmd->callback([o, &status] { status = doctor(*o); });
}

}  // namespace cli
