// Small blocking-socket helpers for bootstrap; every call takes a deadline.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace hw {

using Deadline = std::chrono::steady_clock::time_point;

Deadline deadline_in(double seconds);
// A listening TCP socket on host:port (port 0: any); returns the fd.
int listen_on(const std::string& host, int port);
// One listening socket per host, all on one port: `port`, or (0) the one the
// OS picks for the first. Throws when a host cannot have it.
std::vector<int> listen_on_each(const std::vector<std::string>& hosts, int port);
int local_port(int fd);
// Sockets listening on loopback on a port p and on p + 1 (a cluster's data and heartbeat bootstrap).
struct PortPair {
  int port = 0;
  std::vector<int> fds;  // empty: none bound
};
PortPair listen_on_port_pair();
// A loopback port p with p + 1 free too. Free when checked: another process may take it before it is
// bound again (listen_on_port_pair and hand the sockets down when the race matters).
int free_port_pair();
// Connects to host:port, retrying while refused, until the deadline; a host
// that never answers fails at the deadline too. The error names host:port.
int dial(const std::string& host, int port, Deadline deadline);
int accept_before(int listen_fd, Deadline deadline);
void write_exact(int fd, const void* data, std::size_t n, Deadline deadline);
void read_exact(int fd, void* data, std::size_t n, Deadline deadline);
void set_nonblocking(int fd);
void set_nonblocking_nodelay(int fd);
// "ADDRESS:PORT" of the other end of a connected socket ("unknown" when it has none).
std::string peer_address(int fd);
// Reads and discards what arrives on each of `fds` until its peer closes, or
// the deadline: after a shutdown(SHUT_WR), what makes the later close() an
// orderly one (a close with unread bytes resets the connection, and a reset
// can discard what the peer has not read yet).
void drain_until_closed(const std::vector<int>& fds, Deadline deadline);
// Waits for `fd` to be readable (events POLLIN) or writable until the deadline; false on timeout.
bool wait_fd(int fd, short events, Deadline deadline);

}  // namespace hw
