// meshinfer rdma-check: whether the verbs stack here (Apple's librdma on the
// Macs, rdma-core or softrdma on Linux) behaves as Apple's documented rules say
// (docs/reference-facts.md#macos-rdma-over-thunderbolt), rule by rule, on each
// device; the JSON it writes goes back to correct what softrdma enforces from
// real observations.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "session/output_file.hpp"
#include "engine/base/build_info.hpp"
#include "engine/base/error.hpp"
#include "hw/cluster.hpp"
#ifdef MESHINFER_HAVE_VERBS
#include "hw/tcp_runtime.hpp"
#include "hw/transport.hpp"
#include "hw/verbs/cable_path.hpp"
#include "hw/verbs/port_choice.hpp"
#include "hw/verbs/rdma_rules.hpp"
#include "hw/verbs/verbs_api.hpp"
#endif

namespace cli {

namespace {

struct RdmaCheckOptions {
  std::string cluster, json;
  std::vector<std::string> devices;
  int rank = -1, peer = -1;
  bool secret_stdin = false;
  double wait_s = 1.0;
};

// --device, else the cluster file's rows (rank's own, or every rank's), else every device here.
std::vector<std::string> devices_to_check(const RdmaCheckOptions& o, const std::vector<std::string>& here) {
  if (!o.devices.empty()) return o.devices;
  if (o.cluster.empty()) return here;
  const hw::ClusterSpec cluster = hw::load_cluster(o.cluster);
  if (cluster.rdma_devices.world() == 0)
    throw engine::InputError(o.cluster, "", "no \"rdma\" rows to take devices from");
  if (o.rank >= cluster.world())
    throw engine::InputError("--rank", std::to_string(o.rank),
                             fmt::format("{} has {} ranks", o.cluster, cluster.world()));
  std::vector<std::string> names;
  for (int r = 0; r < cluster.world(); ++r) {
    if (o.rank >= 0 && r != o.rank) continue;
    for (const auto& d : cluster.rdma_devices.row(r))
      if (d && std::find(names.begin(), names.end(), *d) == names.end()) names.push_back(*d);
  }
  return names;
}

#ifdef MESHINFER_HAVE_VERBS
// Pair mode (--peer): this rank's end of its cable to the peer, whose own
// rdma-check holds the other end at the same time. The two meet over TCP on
// the cluster's port, as a cluster of just the two (the lower rank its rank 0).
struct CablePair {
  std::string device;  // this rank's device towards the peer
  std::unique_ptr<hw::TcpRuntime> side;
  std::unique_ptr<hw::CablePath> path;
  nlohmann::json describe;
};

CablePair open_cable_pair(hw::VerbsApi& api, const RdmaCheckOptions& o) {
  hw::ClusterSpec c = hw::load_cluster(o.cluster);
  if (o.secret_stdin) hw::read_secret_from_stdin(c);
  if (o.rank >= c.world() || o.peer >= c.world() || o.peer == o.rank)
    throw engine::InputError("--peer", std::to_string(o.peer),
                             fmt::format("want another rank of the {} in {}", c.world(), o.cluster));
  if (c.rdma_devices.world() == 0 || !c.rdma_devices.row(o.rank).at(o.peer))
    throw engine::InputError(o.cluster, fmt::format("/hosts/{}/rdma/{}", o.rank, o.peer),
                             fmt::format("no RDMA device of rank {} towards rank {}", o.rank, o.peer));
  CablePair pair{c.rdma_devices.device(o.rank, o.peer), nullptr, nullptr, {}};
  hw::ClusterSpec two = c;
  two.hosts = {c.hosts[std::min(o.rank, o.peer)], c.hosts[std::max(o.rank, o.peer)]};
  pair.side = hw::make_tcp_runtime(two, o.rank < o.peer ? 0 : 1, two.port, {});
  hw::PortChoice port;
  if (ibv_context* ctx = api.open_device(pair.device)) {
    try {
      port = hw::choose_port(api, ctx);
    } catch (const std::runtime_error&) {  // check_rdma_rules says why; the other end still meets us
    }
    api.close_device(ctx);
  }
  pair.path = std::make_unique<hw::CablePath>(api, pair.device, port, *pair.side, o.wait_s);
  pair.describe = {{"rank", o.rank},
                   {"peer", o.peer},
                   {"peer_address", c.address(o.rank, o.peer)},
                   {"frames", o.rank < o.peer ? "sent to the peer" : "received from the peer"}};
  return pair;
}

int rdma_check(const RdmaCheckOptions& o) {
  hw::VerbsApi& api = hw::libibverbs();
  CablePair cable;
  if (o.peer >= 0) cable = open_cable_pair(api, o);
  const std::vector<std::string> devices =
      o.peer >= 0 ? std::vector<std::string>{cable.device} : devices_to_check(o, api.device_names());
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  nlohmann::json report = {{"tool", "meshinfer rdma-check"},
                           {"meshinfer", engine::kGitCommit},
                           {"verbs_library", MESHINFER_VERBS_LIB},
                           {"host", host},
                           {"devices", nlohmann::json::array()}};
  if (cable.path) report["pair"] = cable.describe;
  // With --json -, the JSON is all of stdout (doctor --bundle reads it there) and the table goes to stderr.
  const bool json_on_stdout = o.json == "-";
  std::FILE* table = json_on_stdout ? stderr : stdout;
  if (devices.empty()) fmt::print(stderr, "rdma-check: no RDMA device here (ibv_get_device_list is empty)\n");
  int differing = 0, unobserved = 0;
  for (const std::string& device : devices) {
    fmt::print(table, "{}:\n", device);
    nlohmann::json rules = nlohmann::json::array();
    for (const hw::RuleResult& r : hw::check_rdma_rules(api, device, hw::RuleOptions{o.wait_s}, cable.path.get())) {
      fmt::print(table, "  {:<16} {:<13} {}\n", r.rule, hw::verdict_name(r.verdict), r.observed);
      differing += r.verdict == hw::Verdict::kDiffers;
      unobserved += r.verdict == hw::Verdict::kNotObserved;
      rules.push_back({{"rule", r.rule},
                       {"verdict", hw::verdict_name(r.verdict)},
                       {"expected", r.expected},
                       {"observed", r.observed}});
    }
    report["devices"].push_back({{"device", device}, {"rules", rules}});
  }
  if (json_on_stdout) {
    fmt::print("{}\n", report.dump());
  } else if (!o.json.empty()) {
    session::write_text_file(o.json, report.dump(2) + "\n");
    fmt::print("written: {} (send it back with the macOS version: sw_vers)\n", o.json);
  }
  fmt::print(table, "{} rule(s) differ from Apple's documented rules, {} not observed\n", differing, unobserved);
  return differing > 0 || unobserved > 0 || devices.empty() ? kExitBreach : 0;
}
#else
int rdma_check(const RdmaCheckOptions&) {
  throw engine::InputError("rdma-check", "",
                           "this meshinfer was built without a verbs library (see meshinfer --version)");
}
#endif

}  // namespace

void add_rdma_check_command(CLI::App& app, int& status) {
  auto o = std::make_shared<RdmaCheckOptions>();
  auto* cmd = app.add_subcommand("rdma-check", "check the RDMA stack here against Apple's documented rules");
  auto* cluster = cmd->add_option("--cluster", o->cluster, "cluster file: check the devices its \"rdma\" rows name");
  auto* rank =
      cmd->add_option("--rank", o->rank, "with --cluster: only this rank's devices")->check(CLI::NonNegativeNumber);
  cmd->add_option("--device", o->devices, "device to check (repeatable; default: every device here)");
  cmd->add_option("--json", o->json, "write the verdicts to this JSON file (\"-\": stdout, the table to stderr)");
  cmd->add_option("--peer", o->peer,
                  "with --cluster and --rank: send the frames across the cable to this rank, which runs "
                  "rdma-check --rank PEER --peer RANK at the same time")
      ->check(CLI::NonNegativeNumber)
      ->needs(cluster)
      ->needs(rank);
  cmd->add_flag("--secret-stdin", o->secret_stdin, "with --peer: read the cluster's secret from standard input");
  cmd->add_option("--wait", o->wait_s, "seconds a frame may take before it counts as dropped")
      ->check(CLI::PositiveNumber);
  cmd->callback([o, &status] { status = rdma_check(*o); });
}

}  // namespace cli
