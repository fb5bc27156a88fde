#include "hw/socket_util.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "hw/os.hpp"

namespace hw {

namespace {

[[noreturn]] void sys_fail(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }

sockaddr_in resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res)
    throw std::runtime_error("cannot resolve host '" + host + "'");
  sockaddr_in addr = *reinterpret_cast<sockaddr_in*>(res->ai_addr);
  ::freeaddrinfo(res);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

int ms_until(Deadline d) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - std::chrono::steady_clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

}  // namespace

Deadline deadline_in(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

bool wait_fd(int fd, short events, Deadline deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, ms_until(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) sys_fail("poll");
  }
}

int listen_on(const std::string& host, int port) {
  const int fd = tcp_socket();
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr = resolve(host, port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    sys_fail("bind " + host + ":" + std::to_string(port));
  if (::listen(fd, 64) != 0) sys_fail("listen");
  return fd;
}

std::vector<int> listen_on_each(const std::vector<std::string>& hosts, int port) {
  std::vector<int> fds;
  try {
    for (const std::string& host : hosts) fds.push_back(listen_on(host, fds.empty() ? port : local_port(fds[0])));
  } catch (...) {
    for (int fd : fds) ::close(fd);
    throw;
  }
  return fds;
}

int local_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) sys_fail("getsockname");
  return ntohs(addr.sin_port);
}

PortPair listen_on_port_pair() {
  for (;;) {
    const int fd = listen_on("127.0.0.1", 0);
    const int port = local_port(fd);
    try {
      return {port, {fd, listen_on("127.0.0.1", port + 1)}};
    } catch (const std::runtime_error&) {
      ::close(fd);
    }
  }
}

int free_port_pair() {
  const PortPair p = listen_on_port_pair();
  for (int fd : p.fds) ::close(fd);
  return p.port;
}

int dial(const std::string& host, int port, Deadline deadline) {
  const sockaddr_in addr = resolve(host, port);
  const std::string where = host + ":" + std::to_string(port);
  for (;;) {
    // Non-blocking, so a host that drops the SYN costs the deadline, not the kernel's two minutes of retries.
    const int fd = tcp_socket();
    const int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int err = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 ? 0 : errno;
    if (err == EINPROGRESS && wait_fd(fd, POLLOUT, deadline)) {
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err == 0) {
      ::fcntl(fd, F_SETFL, flags);
      return fd;
    }
    ::close(fd);
    if (err == EINPROGRESS)
      throw std::runtime_error(where + " did not answer within the bootstrap timeout (no reply to the connection)");
    if (std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error("cannot connect to " + where + ": " + std::strerror(err));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int accept_before(int listen_fd, Deadline deadline) {
  if (!wait_fd(listen_fd, POLLIN, deadline)) throw std::runtime_error("timed out waiting for a peer to connect");
  const int fd = accept_cloexec(listen_fd);
  if (fd < 0) sys_fail("accept");
  return fd;
}

void write_exact(int fd, const void* data, std::size_t n, Deadline deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    if (!wait_fd(fd, POLLOUT, deadline)) throw std::runtime_error("timed out writing to a peer");
    const ssize_t w = send_no_sigpipe(fd, p, n);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w <= 0) sys_fail("send");
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void read_exact(int fd, void* data, std::size_t n, Deadline deadline) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    if (!wait_fd(fd, POLLIN, deadline)) throw std::runtime_error("timed out reading from a peer");
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r == 0) throw std::runtime_error("peer closed the connection during bootstrap");
    if (r < 0) sys_fail("recv");
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

void drain_until_closed(const std::vector<int>& fds, Deadline deadline) {
  std::vector<pollfd> open;
  for (int fd : fds) open.push_back({fd, POLLIN, 0});
  char sink[1 << 16];
  while (!open.empty() && std::chrono::steady_clock::now() < deadline) {
    if (::poll(open.data(), open.size(), ms_until(deadline)) < 0 && errno != EINTR) return;
    for (std::size_t i = open.size(); i-- > 0;) {
      if (open[i].revents == 0) continue;
      const ssize_t r = ::recv(open[i].fd, sink, sizeof sink, 0);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) open.erase(open.begin() + static_cast<long>(i));
    }
  }
}

void set_nonblocking_nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const int bufsize = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof bufsize);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof bufsize);
  set_nonblocking(fd);
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::string peer_address(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  char text[INET_ADDRSTRLEN] = {};
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      !::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof text))
    return "unknown";
  return std::string(text) + ":" + std::to_string(ntohs(addr.sin_port));
}

}  // namespace hw
