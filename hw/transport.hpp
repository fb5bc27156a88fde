// Runtime creation for one rank of a cluster, by the cluster's transport:
// the one place a new transport (verbs) plugs in.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/runtime.hpp"
#include "hw/cluster.hpp"
#include "hw/tcp_runtime.hpp"

namespace hw {

struct TransportOptions {
  double bootstrap_timeout_s = 60;
  bool busy_wait_compute = false;                                               // see TcpOptions
  std::function<void(const std::string&)> refused = [](const std::string&) {};  // see TcpOptions
  // Rank 0 only: sockets already listening on c.port and c.port + 1, inherited
  // from `launch --local`, which bound them so no other process takes the ports.
  std::vector<int> listen_fds;
};

// The data runtime of `rank` over c.transport ("tcp", or "rdma" when verbs is
// built: VerbsRuntime with a TCP side channel), bootstrapped through rank 0 at
// c.port. Throws InputError when the transport is not built in or a device is missing.
std::unique_ptr<engine::Runtime> make_runtime(const ClusterSpec& c, int rank, const TransportOptions& o);
// A TcpRuntime of `rank` whose rank 0 listens on `port` (heartbeats use c.port + 1).
std::unique_ptr<TcpRuntime> make_tcp_runtime(const ClusterSpec& c, int rank, int port, const TransportOptions& o);
// `primary` (rank 0 at `port`) and a TcpRuntime on c's secondary network (rank 0
// at `port` + 2) as one FallbackRuntime; `primary` itself when c has no secondary network.
std::unique_ptr<engine::Runtime> with_secondary_network(std::unique_ptr<engine::Runtime> primary, const ClusterSpec& c,
                                                        int rank, int port, const TransportOptions& o);

}  // namespace hw
