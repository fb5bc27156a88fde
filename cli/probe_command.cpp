// meshinfer probe: measures every pair of the cluster over its transport and
// writes a link card that `meshinfer run --card` loads.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.hpp"
#include "hw/launcher.hpp"
#include "hw/link_probe.hpp"
#include "hw/os.hpp"
#include "hw/transport.hpp"
#include "session/output_file.hpp"

namespace cli {

namespace {

struct ProbeCommandOptions {
  std::string cluster, exec_prefix, out = ".", name = "probed", port_kind = "thunderbolt";
  int rank = -1;
  hw::ProbeOptions probe;
  double timeout_s = 300;
  bool dry_run = false;
  bool figures_json = false;  // rank 0 prints the figures as JSON, and writes no card
  bool secret_stdin = false;
};

std::vector<std::string> rank_args(const ProbeCommandOptions& o, int r) {
  return {hw::self_executable(),
          "probe",
          "--rank",
          std::to_string(r),
          "--cluster",
          o.cluster,
          "--out",
          o.out,
          "--name",
          o.name,
          "--port-kind",
          o.port_kind,
          "--pings",
          std::to_string(o.probe.pings),
          "--bytes",
          std::to_string(o.probe.bulk_bytes),
          "--repeats",
          std::to_string(o.probe.bulk_repeats),
          "--secret-stdin"};
}

int probe_one_rank(const ProbeCommandOptions& o, hw::ClusterSpec cluster) {
  hw::die_with_parent();
  if (o.secret_stdin) hw::read_secret_from_stdin(cluster);
  const auto rt = hw::make_runtime(cluster, o.rank, hw::TransportOptions{});
  const auto pairs = hw::probe_links(*rt, o.probe);
  const auto rounds = hw::busy_rounds(*rt, o.probe);
  if (o.rank != 0) return 0;
  if (o.figures_json) {
    fmt::print("{}\n", hw::figures_json(pairs).dump());
    return 0;
  }
  fmt::print("{:>6} {:>12} {:>14} {:>14}\n", "pair", "latency us", "a->b MB/s", "b->a MB/s");
  for (const auto& f : pairs)
    fmt::print("{:>6} {:>12.1f} {:>14.1f} {:>14.1f}\n", fmt::format("{}-{}", f.a, f.b), f.latency_s * 1e6,
               f.bandwidth_ab / 1e6, f.bandwidth_ba / 1e6);
  const std::string card = o.out + "/" + o.name + ".json";
  session::write_text_file(card, hw::link_card(o.name, pairs, o.port_kind, cluster.frame_bytes(), cluster.frame_header_bytes(),
                                      rounds)
                                .dump(2) +
                            "\n");
  fmt::print("{:>9} {:>12}   busy rounds: every rank to every other at once\n", "bytes", "round us");
  for (const auto& r : rounds) fmt::print("{:>9} {:>12.1f}\n", r.bytes, r.round_s * 1e6);
  fmt::print("link card: {} (use it with --card {})\n", card, card);
  return 0;
}

int probe(const ProbeCommandOptions& o) {
  const hw::ClusterSpec cluster = hw::load_cluster(o.cluster);
  if (o.rank >= 0) return probe_one_rank(o, cluster);
  std::vector<std::vector<std::string>> commands;
  for (int r = 0; r < cluster.world(); ++r)
    commands.push_back(hw::rank_command(cluster, r, o.exec_prefix, rank_args(o, r)));
  // On each rank's stdin, never a command line.
  return hw::run_ranks(commands, o.timeout_s, o.dry_run, {}, hw::secret_for_run(cluster) + "\n");
}

}  // namespace

void add_probe_command(CLI::App& app, int& status) {
  auto o = std::make_shared<ProbeCommandOptions>();
  auto* cmd = app.add_subcommand("probe", "measure each pair's latency and bandwidth and write a link card");
  cmd->add_option("--cluster", o->cluster, "cluster file (MLX hostfile)")->required();
  cmd->add_option("--rank", o->rank, "run only this rank (without it: start every rank, like launch)");
  cmd->add_option("--exec-prefix", o->exec_prefix, "start each rank under this command ({rank}, {host} replaced)");
  cmd->add_option("--out", o->out, "directory to write the link card into (default: here)");
  cmd->add_option("--name", o->name, "the card's name, and its file's: NAME.json (default probed)");
  cmd->add_option("--port-kind", o->port_kind, "the card's port_kind: thunderbolt, qsfp or ethernet");
  cmd->add_option("--pings", o->probe.pings, "round trips per pair")->check(CLI::PositiveNumber);
  cmd->add_flag("--secret-stdin", o->secret_stdin, "read the cluster's secret from standard input (launch's way)");
  cmd->add_option("--bytes", o->probe.bulk_bytes, "bytes per timed transfer")->check(CLI::PositiveNumber);
  cmd->add_option("--repeats", o->probe.bulk_repeats, "timed transfers per direction")->check(CLI::PositiveNumber);
  cmd->add_option("--timeout", o->timeout_s, "seconds before every rank is killed");
  cmd->add_flag("--dry-run", o->dry_run, "print the command of each rank and start nothing");
  cmd->add_flag("--figures-json", o->figures_json, "with --rank 0: print the figures as JSON instead of a card");
  cmd->callback([o, &status] { status = probe(*o); });
}

}  // namespace cli
