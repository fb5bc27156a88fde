#include "cli/launch_netns.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/load_for_run.hpp"
#include "cli/rank_launch.hpp"
#include "engine/base/error.hpp"
#include "hw/faults/netns_faults.hpp"
#include "hw/faults/packet_loss.hpp"
#include "hw/faults/stack_failure.hpp"
#include "hw/launcher.hpp"
#include "hw/membership_proof.hpp"
#include "hw/netns_mesh.hpp"
#include "hw/os.hpp"

namespace cli {

namespace {

constexpr int kPort = 5000;  // each namespace has its own ports

// Measures the mesh into OUT/cards/LINK.json, a card that replaces the
// scenario's link card by name in both worlds; returns its path ("" on failure).
std::string probe_mesh(const hw::NetnsMesh& mesh, const std::string& cluster, const std::string& out,
                       const std::string& link) {
  const std::vector<std::string> probe{hw::self_executable(),
                                       "probe",
                                       "--cluster",
                                       cluster,
                                       "--exec-prefix",
                                       mesh.exec_prefix(),
                                       "--out",
                                       out + "/cards",
                                       "--name",
                                       link,
                                       "--pings",
                                       "30",
                                       "--bytes",
                                       "1000000",
                                       "--repeats",
                                       "2",
                                       "--timeout",
                                       "120"};
  return hw::run_ranks({probe}, 180, false) == 0 ? out + "/cards/" + link + ".json" : "";
}

// The secondary network's card for both worlds, scaled as the mesh was: the
// probed cable's card with the bandwidth times the catalog's ratio of
// `secondary` to `cable`, and the same latency (both are veths here).
// Written beside the probed card; returns its path.
std::string secondary_card(const std::string& probed, const engine::LinkCard& cable,
                           const engine::LinkCard& secondary) {
  nlohmann::json card = nlohmann::json::parse(std::ifstream(probed));
  card["name"] = secondary.name;
  const double scale = secondary.bandwidth / cable.bandwidth;
  card["bandwidth_gbps"] = card["bandwidth_gbps"].get<double>() * scale;
  if (card.contains("wire_time_by_size"))
    for (auto& point : card["wire_time_by_size"]) point["us"] = point["us"].get<double>() / scale;
  card["switched"] = secondary.switched;
  card["port_kind"] = secondary.port_kind;
  card["notes"] = fmt::format(
      "The secondary network of launch --netns: a bridge, each node's port shaped at {} scaled as the cables "
      "were; bandwidth the probed cable's x{:.4g} ({}'s over {}'s), latency the probed cable's.",
      secondary.name, scale, secondary.name, cable.name);
  const std::string path = std::filesystem::path(probed).parent_path() / (secondary.name + ".json");
  std::ofstream(path) << card.dump(2) << "\n";
  return path;
}

}  // namespace

int launch_netns(const NetnsLaunch& o) {
  // Chosen once, here, as the ranks will run it: every message sent.
  const session::RunSession l =
      load_for_run(o.scenario, o.cards, std::nullopt, false, engine::SimulationLevel::kMessage);
  auto refusal = hw::netns_refusal(l.scenario);
  if (!refusal) refusal = hw::packet_loss_refusal(l.scenario, o.rdma, true);
  if (!refusal) refusal = hw::ip_surviving_stack_failure_refusal(l.scenario, o.rdma);
  if (refusal) throw engine::InputError(o.scenario, refusal->json_path, refusal->reason + " (launch --netns)");
  const std::string& link = l.scenario.fabric.link;
  const engine::LinkCard& cable = l.catalog.link(link);
  if (cable.switched)
    throw engine::InputError(o.scenario, "/cluster/fabric/link",
                             link + " is a switched network; launch --netns builds point-to-point cables");
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty()) {
    fmt::print(stderr, "launch --netns: {}\n", why);
    return 1;
  }
  const double card_bps = cable.bandwidth * 8;
  const double rate_bps = std::min(card_bps, o.max_rate_bps > 0 ? o.max_rate_bps : hw::kCableRateBps);
  const double scale = rate_bps / card_bps;
  const std::string out = o.out.empty() ? "reports/out/" + l.scenario.name : o.out;
  std::filesystem::create_directories(out);

  const int world = static_cast<int>(l.scenario.nodes.size());
  const auto& secondary_link = l.scenario.fabric.secondary_link;
  std::optional<std::string> secondary_tbf;
  if (secondary_link) secondary_tbf = hw::cable_tbf(l.catalog.link(*secondary_link).bandwidth * 8 * scale);
  hw::NetnsMesh mesh(world, hw::cable_tbf(rate_bps), secondary_tbf);
  std::string shaping = fmt::format(
      "{} namespaces, a veth pair per cable shaped by tbf {} ({} at {:.3g} Gbit/s, scaled x{:.3g} to "
      "what this machine carries; latency is the veth's own)",
      world, hw::cable_tbf(rate_bps), link, card_bps / 1e9, scale);
  if (secondary_link)
    shaping += fmt::format("; the secondary network a bridge, each node's port shaped by tbf {} ({} scaled alike)",
                           *secondary_tbf, *secondary_link);
  fmt::print(stderr, "launch: {}\n", shaping);
  const std::string cluster = out + "/cluster.json";
  std::ofstream(cluster) << mesh.cluster(kPort, o.rdma).dump(2) << "\n";
  const std::string card = probe_mesh(mesh, cluster, out, link);
  if (card.empty()) {
    fmt::print(stderr, "launch --netns: probing the mesh failed\n");
    return 1;
  }
  std::vector<std::string> cards{card};
  if (secondary_link) cards.push_back(secondary_card(card, cable, l.catalog.link(*secondary_link)));

  const std::string log = out + "/applied-faults.jsonl";
  std::ofstream(log, std::ios::trunc) << "";
  hw::append_event(
      log, hw::unix_now_s(),
      {0, "netns-mesh", "", shaping + "; link cards probed on it: " + fmt::format("{}", fmt::join(cards, ", "))});
  const hw::ClusterSpec spec = hw::load_cluster(cluster);
  const std::string secret = hw::make_cluster_secret();  // on each rank's stdin, never a command line
  // rdma-packet-loss on a cable: softrdma's devices at its two ends, named by their addresses.
  hw::PacketLossSwitch packet_loss(l.scenario, out, [&](const engine::FaultSpec& f) {
    return std::vector<std::string>{mesh.address_towards(f.node, f.peer), mesh.address_towards(f.peer, f.node)};
  });
  // An RDMA stack failure that IP survives fails softrdma's devices and leaves the veths up.
  hw::StackFailureSwitch stack_failure(l.scenario, out, true);
  std::vector<std::string> env;
  if (packet_loss.armed()) env.push_back(packet_loss.setting());
  if (stack_failure.armed()) env.push_back(stack_failure.setting());
  if (!env.empty()) env.insert(env.begin(), "env");
  std::vector<std::vector<std::string>> commands;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> node = node_argv(r, cluster, o.scenario, out, o.cards, l.plan.strategy);
    node.insert(node.end(), {"--applied-faults", log, "--secret-stdin", "--add-latency"});
    for (const std::string& c : cards) node.insert(node.end(), {"--card", c});  // last: they replace the catalog's
    node.insert(node.begin(), env.begin(), env.end());
    commands.push_back(hw::rank_command(spec, r, mesh.exec_prefix(), node));
  }

  std::vector<double> boot_s;
  for (const auto& n : l.scenario.nodes) boot_s.push_back(l.catalog.hardware(n.hardware).boot_s);
  hw::NetnsFaults faults(l.scenario, mesh, rate_bps, boot_s);
  hw::LaunchHooks hooks = faults_on_rank0_clock(log, [&](double t_s, const std::vector<pid_t>& pids, const auto& note) {
    faults.apply_due(t_s, pids, note);
    stack_failure.flip_due(t_s);  // its event is NetnsFaults', noted above
    for (const engine::RunEvent& e : packet_loss.apply_due(t_s)) note(e);
    faults.end_left_out(pids);
  });
  hooks.restart = [&] { return faults.take_restarts(); };
  fmt::print(stderr,
             "launch: its simulated twin, once this run ends: meshinfer run {} --card {} --out {}/sim; then "
             "meshinfer compare {}/sim/report.json {}/report.json\n",
             o.scenario, fmt::join(cards, " --card "), out, out, out);
  return hw::run_ranks(commands, o.timeout_s, false, hooks, secret + "\n");
}

}  // namespace cli
