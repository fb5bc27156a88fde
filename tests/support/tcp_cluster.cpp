#include "support/tcp_cluster.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "hw/socket_util.hpp"
#include "hw/tcp_runtime.hpp"

namespace testsupport {

std::vector<sim::ChildResult> run_tcp_cluster(int n, const std::function<std::string(engine::Runtime&)>& fn,
                                              unsigned alarm_s) {
  return run_tcp_cluster(
      n, fn, [](int, hw::TcpOptions&) {}, alarm_s);
}

std::vector<sim::ChildResult> run_tcp_cluster(int n, const std::function<std::string(engine::Runtime&)>& fn,
                                              const std::function<void(int, hw::TcpOptions&)>& configure,
                                              unsigned alarm_s) {
  // The coordinator's socket is bound before forking, so no rank races for the port.
  const int listen_fd = hw::listen_on("127.0.0.1", 0);
  const int port = hw::local_port(listen_fd);
  std::vector<int> pipes(n);
  std::vector<pid_t> pids(n);
  std::fflush(nullptr);
  for (int r = 0; r < n; ++r) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe");
    pids[r] = ::fork();
    if (pids[r] == 0) {
      ::alarm(alarm_s);  // a hung rank must not hang the test
      ::close(fds[0]);
      std::string out = "0";
      try {
        hw::TcpOptions o;
        o.coordinator_port = port;
        o.coordinator_listen_fd = r == 0 ? listen_fd : -1;
        configure(r, o);
        if (r != 0) ::close(listen_fd);
        hw::TcpRuntime rt(r, n, o);
        out = "1" + fn(rt);
      } catch (const std::exception& e) {
        out = std::string("0") + e.what();
      }
      if (::write(fds[1], out.data(), out.size()) < 0) ::_exit(3);
      ::_exit(0);
    }
    ::close(fds[1]);
    pipes[r] = fds[0];
  }
  ::close(listen_fd);
  std::vector<sim::ChildResult> results(n);
  for (int r = 0; r < n; ++r) {
    std::string buf;
    char chunk[4096];
    ssize_t got;
    while ((got = ::read(pipes[r], chunk, sizeof chunk)) > 0) buf.append(chunk, static_cast<std::size_t>(got));
    ::close(pipes[r]);
    int status = 0;
    ::waitpid(pids[r], &status, 0);
    if (WIFSIGNALED(status))
      results[r] = {false, "rank " + std::to_string(r) + " killed by signal " + std::to_string(WTERMSIG(status))};
    else if (buf.empty())
      results[r] = {false, "rank " + std::to_string(r) + " returned nothing"};
    else
      results[r] = {buf[0] == '1', buf.substr(1)};
  }
  return results;
}

}  // namespace testsupport
