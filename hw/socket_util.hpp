// Small blocking-socket helpers for bootstrap; every call takes a deadline.
#pragma once

#include <chrono>
#include <string>

namespace hw {

using Deadline = std::chrono::steady_clock::time_point;

Deadline deadline_in(double seconds);
// A listening TCP socket on host:port (port 0: any); returns the fd.
int listen_on(const std::string& host, int port);
int local_port(int fd);
// Connects to host:port, retrying while refused, until the deadline; a host
// that never answers fails at the deadline too. The error names host:port.
int dial(const std::string& host, int port, Deadline deadline);
int accept_before(int listen_fd, Deadline deadline);
void write_exact(int fd, const void* data, std::size_t n, Deadline deadline);
void read_exact(int fd, void* data, std::size_t n, Deadline deadline);
void set_nonblocking_nodelay(int fd);
// Waits for `fd` to be readable (events POLLIN) or writable until the deadline; false on timeout.
bool wait_fd(int fd, short events, Deadline deadline);

}  // namespace hw
