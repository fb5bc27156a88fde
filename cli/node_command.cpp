// meshinfer node (and meshinfer-node, the same without the simulator): one
// rank of a real run over the cluster's transport, with the ModelledBackend
// spending each op's modelled time in real time. The reporting rank writes
// the same reports as `meshinfer run`.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "engine/compute/cpu_backend.hpp"
#include "engine/compute/thread_pool.hpp"
#include "engine/input/workload.hpp"
#include "hw/faults/netns_faults.hpp"
#include "hw/node_process.hpp"
#include "hw/os.hpp"
#include "session/run_session.hpp"

namespace cli {

namespace {

struct NodeOptions {
  int rank = 0;
  std::string cluster, scenario, out, applied_faults;
  std::vector<std::string> cards;
  bool busy_wait = false;
  bool secret_stdin = false;
  bool add_latency = false;
  double bootstrap_timeout_s = 60;
  std::vector<int> listen_fds;
  int threads = 0;
  std::optional<engine::Strategy> parallelism;
};

// The flag, else the scenario's node, else this host's cores shared by the
// ranks the cluster file puts on it.
int compute_threads(const NodeOptions& o, const hw::ClusterSpec& cluster, const engine::Scenario& s) {
  if (o.threads > 0) return o.threads;
  if (s.nodes.at(o.rank).threads > 0) return s.nodes[o.rank].threads;
  int here = 0;
  for (const auto& h : cluster.hosts) here += h.ssh == cluster.hosts.at(o.rank).ssh;
  return std::max(1, engine::cpu::hardware_threads() / std::max(1, here));
}

int node(const NodeOptions& o) {
  hw::ClusterSpec cluster = hw::load_cluster(o.cluster);
  if (o.secret_stdin) hw::read_secret_from_stdin(cluster);
  if (cluster.secret.empty())
    fmt::print(stderr, "rank {}: {} has no \"secret\": any meshinfer process can join this cluster\n", o.rank,
               o.cluster);
  // Real processes send every message: the report says so.
  session::RunSession l = session::open_session(o.scenario, o.cards, std::nullopt, engine::SimulationLevel::kMessage);
  l.plan = session::plan_for(l, o.parallelism);
  if (o.rank == 0) fmt::print("{}", l.plan.describe());
  if (!l.scenario.faults.empty() && o.applied_faults.empty() && o.rank == 0)  // said once, by the reporting rank
    fmt::print(stderr, "rank {}: the scenario's faults are injected in simulation only; a real run meets the world's\n",
               o.rank);
  hw::die_with_parent();    // the launcher or ssh session is gone: so is this rank
  hw::wake_on_time();       // modelled op times are sleeps: wake when asked, not up to 50 us later
  hw::keep_freed_memory();  // every message is a fresh buffer: a 64 MiB all-reduce spent a third in page faults
  engine::EngineSetup setup{
      l.scenario, l.catalog, l.plan, l.profile, engine::make_requests(l.scenario.workload, l.scenario.seed), {}, {}};
  if (!l.scenario.model_dir.empty())
    setup.backend = engine::cpu_backends(l.scenario.model_dir, false, compute_threads(o, cluster, l.scenario));
  setup.on_event = [&](const engine::RunEvent& e) {  // live, as it happens: the report comes at the end
    fmt::print(stderr, "rank {}: at {:.3f} s: {}{}{}\n", o.rank, e.t_s, e.kind, e.target.empty() ? "" : " " + e.target,
               e.detail.empty() ? "" : ": " + e.detail);
  };
  const hw::TransportOptions transport{
      o.bootstrap_timeout_s, o.busy_wait,
      [&](const std::string& what) { fmt::print(stderr, "rank {}: refused {}\n", o.rank, what); }, o.listen_fds};
  double zero_unix = 0;
  const auto delays = o.add_latency ? engine::added_latencies(l.scenario, o.rank) : std::vector<engine::AddedLatency>{};
  hw::NodeOutcome outcome = hw::run_node_process(
      cluster, o.rank, transport, setup,
      [&](double zero) {
        zero_unix = zero;
        fmt::print(stderr, "rank {}: joined a world of {}; run clock zero at unix {:.6f}\n", o.rank, cluster.world(),
                   zero);
      },
      delays);
  const std::string& error = outcome.result.nodes[o.rank].error;
  if (!error.empty()) fmt::print(stderr, "rank {}: {}\n", o.rank, error);
  if (!outcome.reporter) return 0;
  if (o.rank != 0) fmt::print(stderr, "rank {}: rank 0 is gone; this rank reports\n", o.rank);
  if (!o.applied_faults.empty()) {  // the launcher's faults, beside what the ranks saw
    auto& events = outcome.result.events;
    for (const auto& e : hw::read_events(o.applied_faults, zero_unix)) events.push_back(e);
    std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.t_s < b.t_s; });
  }
  return session::report_run(l, outcome.result, o.out, cluster.describe_transport());
}

}  // namespace

void add_node_command(CLI::App& app, int& status) {
  add_node_options(app.add_subcommand("node", "run one rank of a scenario as a real process (see launch)"), status);
}

void add_node_options(CLI::App* cmd, int& status) {
  auto o = std::make_shared<NodeOptions>();
  cmd->add_option("--rank", o->rank, "this process's rank in the cluster file")->required();
  cmd->add_option("--cluster", o->cluster, "cluster file (MLX hostfile)")->required();
  cmd->add_option("scenario", o->scenario, "scenario file")->required();
  cmd->add_option("--out", o->out, "report directory on the reporting rank (default reports/out/<scenario name>)");
  cmd->add_option("--card", o->cards, "extra hardware or link card file (repeatable)");
  const auto& strategies = engine::Names<engine::Strategy>::value;
  cmd->add_option_function<std::string>(
         "--parallelism", [o](const std::string& name) { o->parallelism = engine::parse_name<engine::Strategy>(name); },
         "the plan's strategy where the scenario says \"auto\" (launch passes the one it chose)")
      ->check(CLI::IsMember(std::vector<std::string>(strategies.begin(), strategies.end())));
  cmd->add_flag("--busy-wait", o->busy_wait, "spin through the end of each modelled op (needs a spare core per rank)");
  cmd->add_option("--applied-faults", o->applied_faults,
                  "the launcher's log of faults it applied (launch --netns), added to the report");
  cmd->add_flag("--add-latency", o->add_latency,
                "delay this rank's messages over a cable by the latency the scenario's link-degrade faults add, "
                "while they last (launch --netns)");
  cmd->add_option("--bootstrap-timeout", o->bootstrap_timeout_s, "seconds to wait for every rank to join");
  cmd->add_option("--threads", o->threads,
                  "threads computing a model directory (default: the scenario node's \"threads\", else this "
                  "host's cores divided by the cluster file's ranks on it)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--secret-stdin", o->secret_stdin, "read the cluster's secret from standard input (launch's way)");
  cmd->add_option("--listen-fds", o->listen_fds,
                  "rank 0: inherited sockets already listening on the cluster's port and the next (launch --local)")
      ->delimiter(',');
  cmd->callback([o, &status] { status = node(*o); });
}

}  // namespace cli
