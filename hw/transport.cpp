#include "hw/transport.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "engine/base/error.hpp"
#include "hw/fallback_runtime.hpp"
#ifdef MESHINFER_HAVE_VERBS
#include "hw/verbs/verbs_api.hpp"
#include "hw/verbs/verbs_runtime.hpp"
#endif

namespace hw {

namespace {

TcpOptions tcp_options(const ClusterSpec& c, int rank, int port, const TransportOptions& o) {
  TcpOptions t;
  t.coordinator_port = port;
  t.bootstrap_timeout_s = o.bootstrap_timeout_s;
  t.busy_wait_compute = o.busy_wait_compute;
  t.refused = o.refused;
  // Listen where peers dial: on the address of each cable this rank shares with one.
  t.listen_hosts.clear();
  for (int r = 0; r < c.world(); ++r)
    if (r != rank &&
        std::find(t.listen_hosts.begin(), t.listen_hosts.end(), c.address(r, rank)) == t.listen_hosts.end())
      t.listen_hosts.push_back(c.address(r, rank));
  if (t.listen_hosts.empty()) t.listen_hosts.push_back(c.hosts[rank].ips.front());
  t.coordinator_host = rank == 0 ? std::string() : c.address(rank, 0);
  t.secret = c.secret;
  const int inherited = port - c.port;  // launch --local: rank 0's sockets at c.port and c.port + 1
  if (rank == 0 && inherited >= 0 && inherited < static_cast<int>(o.listen_fds.size()))
    t.coordinator_listen_fd = o.listen_fds[inherited];
  for (int r = 0; r < c.world(); ++r) t.peer_hosts.push_back(r == rank ? std::string() : c.address(rank, r));
  return t;
}

#ifdef MESHINFER_HAVE_VERBS
// VerbsRuntime over this rank's row of the device matrix, its side channel at
// c.port. A device missing here is refused before waiting on any peer.
std::unique_ptr<engine::Runtime> make_rdma_runtime(const ClusterSpec& c, int rank, const TransportOptions& o) {
  if (c.rdma_devices.world() != c.world())
    throw engine::InputError(c.file, "",
                             "the rdma transport needs every host's \"rdma\" row (its device towards each rank)");
  const auto present = libibverbs().device_names();
  for (int to = 0; to < c.world(); ++to) {
    if (to == rank) continue;
    const std::string& device = c.rdma_devices.device(rank, to);
    if (std::find(present.begin(), present.end(), device) == present.end())
      throw engine::InputError(
          c.file, "",
          fmt::format("rank {} -> rank {}: RDMA device \"{}\" not found on this host (devices here: {})", rank, to,
                      device, present.empty() ? "none" : fmt::format("{}", fmt::join(present, ", "))));
  }
  VerbsOptions v;
  v.devices = c.rdma_devices.row(rank);
  v.frame_bytes = c.rdma_frame_bytes;
  v.qp_type = c.rdma_qp == "rc" ? QpType::kRC : QpType::kUC;
  return make_verbs_runtime(rank, c.world(), tcp_options(c, rank, c.port, o), v);
}
#endif

}  // namespace

std::unique_ptr<TcpRuntime> make_tcp_runtime(const ClusterSpec& c, int rank, int port, const TransportOptions& o) {
  return std::make_unique<TcpRuntime>(rank, c.world(), tcp_options(c, rank, port, o));
}

std::unique_ptr<engine::Runtime> with_secondary_network(std::unique_ptr<engine::Runtime> primary, const ClusterSpec& c,
                                                        int rank, int port, const TransportOptions& o) {
  if (!c.has_secondary()) return primary;
  TcpOptions t = tcp_options(c, rank, port, o);
  t.coordinator_port = port + 2;
  t.coordinator_listen_fd = -1;
  t.listen_hosts = {c.hosts[rank].secondary_ip};
  t.coordinator_host = rank == 0 ? std::string() : c.hosts[0].secondary_ip;
  for (int r = 0; r < c.world(); ++r) t.peer_hosts[r] = r == rank ? std::string() : c.hosts[r].secondary_ip;
  return std::make_unique<FallbackRuntime>(std::move(primary), std::make_unique<TcpRuntime>(rank, c.world(), t));
}

std::unique_ptr<engine::Runtime> make_runtime(const ClusterSpec& c, int rank, const TransportOptions& o) {
  if (rank < 0 || rank >= c.world())
    throw engine::InputError(
        c.file, "",
        "rank " + std::to_string(rank) + " is not in this cluster of " + std::to_string(c.world()) + " host(s)");
  if (c.transport == "tcp") return make_tcp_runtime(c, rank, c.port, o);
#ifdef MESHINFER_HAVE_VERBS
  if (c.transport == "rdma") return make_rdma_runtime(c, rank, o);
#endif
  throw engine::InputError(c.file, "/transport", "the " + c.transport + " transport is not built in (use \"tcp\")");
}

}  // namespace hw
