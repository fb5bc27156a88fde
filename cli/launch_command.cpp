// meshinfer launch: starts every rank of a real run (local processes, or over
// ssh from a hostfile) and exits with rank 0's status.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "cli/commands.hpp"
#include "cli/launch_netns.hpp"
#include "cli/load_for_run.hpp"
#include "cli/rank_launch.hpp"
#include "engine/base/error.hpp"
#include "engine/compute/thread_pool.hpp"
#include "hw/faults/netns_faults.hpp"
#include "hw/faults/packet_loss.hpp"
#include "hw/faults/stack_failure.hpp"
#include "hw/launcher.hpp"
#include "hw/membership_proof.hpp"
#include "hw/os.hpp"
#include "hw/socket_util.hpp"

namespace cli {

namespace {

struct LaunchOptions {
  std::string scenario, hostfile, exec_prefix, out, rdma_device;
  int local = 0, threads = 0;
  std::vector<std::string> cards;
  double timeout_s = 600;
  bool dry_run = false, netns = false, netns_rdma = false, ignore_faults = false;
  double netns_rate_bps = 0;
};

// Without namespaces, a launch carries out only softrdma's switches (given an
// RDMA device); a scenario whose other faults would silently not happen, its
// expectations judged on a run without them, is refused unless told.
void refuse_faults_it_cannot_apply(const LaunchOptions& o, const engine::Scenario& s) {
  if (o.ignore_faults) return;
  for (std::size_t i = 0; i < s.faults.size(); ++i) {
    const engine::FaultKind kind = s.faults[i].kind;
    const bool switched = kind == engine::FaultKind::kRdmaStackFailure || kind == engine::FaultKind::kRdmaPacketLoss;
    if (switched && !o.rdma_device.empty()) continue;
    throw engine::InputError(
        o.scenario, fmt::format("/faults/{}/kind", i),
        fmt::format("{}: launch --local and --hostfile apply no such fault to real processes (only softrdma's "
                    "rdma-stack-failure and rdma-packet-loss, with --rdma-device); run it under launch --netns "
                    "(root), which applies every kind, or pass --ignore-faults to run without the scenario's faults",
                    engine::to_string(kind)));
  }
}

// Spinning helps only where every rank of a machine still has a core of its own.
bool has_cores_to_spare(const hw::ClusterSpec& c, int r, bool same_machine) {
  int sharing = 0;
  for (int k = 0; k < c.world(); ++k) sharing += same_machine || c.hosts[k].ssh == c.hosts[r].ssh;
  return sharing < static_cast<int>(std::thread::hardware_concurrency());
}

int launch(const LaunchOptions& o) {
  // Chosen once, here, as the ranks will run it: every message sent.
  const session::RunSession l =
      load_for_run(o.scenario, o.cards, std::nullopt, false, engine::SimulationLevel::kMessage);
  const std::string out = o.out.empty() ? "reports/out/" + l.scenario.name : o.out;
  std::string cluster_file = o.hostfile;
  hw::PortPair ports;
  if (o.local > 0) {
    std::filesystem::create_directories(out);
    cluster_file = out + "/cluster.json";
    ports = hw::listen_on_port_pair();
    std::ofstream(cluster_file) << hw::local_cluster_json(o.local, ports.port, o.rdma_device);
  }
  const hw::ClusterSpec cluster = hw::load_cluster(cluster_file);
  if (cluster.world() != static_cast<int>(l.scenario.nodes.size()))
    throw engine::InputError(cluster_file, "",
                             fmt::format("{} host(s), but scenario {} has {} node(s)", cluster.world(), o.scenario,
                                         l.scenario.nodes.size()));
  // Without a secret in the file, one for this run, on each rank's stdin (never a command line).
  const std::string secret = cluster.secret.empty() ? hw::make_cluster_secret() : "";
  // Over softrdma (--rdma-device), its switches carry out the scenario's
  // rdma-stack-failure and rdma-packet-loss (on every cable: all ranks share
  // one device); elsewhere the ranks say the faults are simulated only.
  if (const auto refusal = hw::packet_loss_refusal(l.scenario, !o.rdma_device.empty(), false))
    throw engine::InputError(o.scenario, refusal->json_path, refusal->reason);
  refuse_faults_it_cannot_apply(o, l.scenario);
  hw::StackFailureSwitch stack_failure(l.scenario, out);
  hw::PacketLossSwitch packet_loss(l.scenario, out, nullptr);  // no cable targets: refused above
  const bool switched = (stack_failure.armed() || packet_loss.armed()) && !o.rdma_device.empty();
  const std::string log = out + "/applied-faults.jsonl";
  if (switched) std::ofstream(log, std::ios::trunc) << "";
  const bool same_machine = o.local > 0 || !o.exec_prefix.empty();
  if (const auto cores = std::thread::hardware_concurrency(); same_machine && cluster.world() > static_cast<int>(cores))
    fmt::print(stderr,
               "launch: {} ranks share this machine's {} cores: they wait for each other's computing, so the "
               "timings run slower than on machines of their own\n",
               cluster.world(), cores);
  std::vector<std::vector<std::string>> commands;
  for (int r = 0; r < cluster.world(); ++r) {
    std::vector<std::string> node = node_argv(r, cluster_file, o.scenario, out, o.cards, l.plan.strategy);
    if (!secret.empty()) node.push_back("--secret-stdin");
    if (switched) {
      node.insert(node.end(), {"--applied-faults", log});
      node.insert(node.begin(), {"env", stack_failure.setting(), packet_loss.setting()});
    }
    if (r == 0 && !ports.fds.empty())
      node.insert(node.end(), {"--listen-fds", fmt::format("{},{}", ports.fds[0], ports.fds[1])});
    if (has_cores_to_spare(cluster, r, same_machine)) node.push_back("--busy-wait");
    // Here every rank is on this machine, whatever host names the cluster file gives: they share its cores.
    const int threads = o.threads > 0                      ? o.threads
                        : l.scenario.nodes[r].threads > 0 ? 0
                        : same_machine                    ? std::max(1, engine::cpu::hardware_threads() / cluster.world())
                                                          : 0;
    if (threads > 0) node.insert(node.end(), {"--threads", std::to_string(threads)});
    commands.push_back(hw::rank_command(cluster, r, o.exec_prefix, node));
  }
  hw::LaunchHooks hooks;
  if (switched)
    hooks = faults_on_rank0_clock(log, [&](double t_s, const std::vector<pid_t>&, const auto& note) {
      for (const engine::RunEvent& e : packet_loss.apply_due(t_s)) note(e);
      if (const auto e = stack_failure.flip_due(t_s)) note(*e);
    });
  std::vector<std::vector<int>> inherit(cluster.world());
  inherit[0] = ports.fds;
  return hw::run_ranks(commands, o.timeout_s, o.dry_run, hooks, secret.empty() ? "" : secret + "\n", inherit);
}

}  // namespace

void add_launch_command(CLI::App& app, int& status) {
  auto o = std::make_shared<LaunchOptions>();
  auto* cmd = app.add_subcommand("launch", "run a scenario as real processes, one per node, and gather one report");
  cmd->add_option("scenario", o->scenario, "scenario file")->required();
  auto* local = cmd->add_option("--local", o->local, "start N processes on 127.0.0.1")->check(CLI::PositiveNumber);
  auto* hostfile =
      cmd->add_option("--hostfile", o->hostfile, "cluster file (MLX hostfile): one rank per host, over ssh");
  local->excludes(hostfile);
  hostfile->excludes(local);
  cmd->add_option("--rdma-device", o->rdma_device,
                  "with --local: over the rdma transport, every pair on this device (rdma_lo with softrdma preloaded)")
      ->needs(local);
  cmd->add_option("--exec-prefix", o->exec_prefix,
                  "instead of ssh, start each rank under this command ({rank}, {host} replaced), "
                  "e.g. 'ip netns exec mesh{rank}'");
  cmd->add_option("--out", o->out, "report directory (default reports/out/<scenario name>)");
  cmd->add_option("--card", o->cards, "extra hardware or link card file, passed to every rank (repeatable)");
  cmd->add_option("--timeout", o->timeout_s, "seconds before every rank is killed");
  cmd->add_option("--threads", o->threads,
                  "threads each rank computes a model directory on (default: the scenario node's \"threads\", "
                  "else its host's cores divided by the ranks there)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--dry-run", o->dry_run, "print the command of each rank and start nothing");
  cmd->add_flag("--ignore-faults", o->ignore_faults,
                "run a scenario whose faults this launch cannot apply (all but softrdma's) without them");
  auto* netns = cmd->add_flag("--netns", o->netns,
                              "Linux, root: one network namespace per node, a shaped veth pair per cable, the "
                              "scenario's faults applied to the real processes and links");
  netns->excludes(local)->excludes(hostfile);
  cmd->add_option("--netns-rate", o->netns_rate_bps, "bits/s a shaped cable may carry at most (default 50e6)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--netns-rdma", o->netns_rdma,
                "with --netns: over the rdma transport, on softrdma's device of each veth (preload softrdma)")
      ->needs(netns);
  cmd->callback([o, &status, local, hostfile] {
    if (o->netns) {
      status = launch_netns({o->scenario, o->out, o->cards, o->timeout_s, o->netns_rate_bps, o->netns_rdma});
      return;
    }
    if (!*local && !*hostfile) throw engine::InputError("launch", "", "give --local N, --hostfile FILE or --netns");
    status = launch(*o);
  });
}

}  // namespace cli
