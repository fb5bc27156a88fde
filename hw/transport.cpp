#include "hw/transport.hpp"

#include "engine/error.hpp"

namespace hw {

std::unique_ptr<TcpRuntime> make_tcp_runtime(const ClusterSpec& c, int rank, int port, const TransportOptions& o) {
  TcpOptions t;
  t.coordinator_port = port;
  t.bootstrap_timeout_s = o.bootstrap_timeout_s;
  t.busy_wait_compute = o.busy_wait_compute;
  // Listen on every address: peers reach this rank on the address of the cable they share.
  t.listen_host = "0.0.0.0";
  t.coordinator_host = rank == 0 ? "0.0.0.0" : c.address(rank, 0);
  for (int r = 0; r < c.world(); ++r) t.peer_hosts.push_back(r == rank ? std::string() : c.address(rank, r));
  return std::make_unique<TcpRuntime>(rank, c.world(), t);
}

std::unique_ptr<engine::Runtime> make_runtime(const ClusterSpec& c, int rank, const TransportOptions& o) {
  if (rank < 0 || rank >= c.world())
    throw engine::InputError(c.file, "", "rank " + std::to_string(rank) + " is not in this cluster of " +
                                             std::to_string(c.world()) + " host(s)");
  if (c.transport == "tcp") return make_tcp_runtime(c, rank, c.port, o);
  throw engine::InputError(c.file, "/transport", "the " + c.transport + " transport is not built in (use \"tcp\")");
}

}  // namespace hw
