#include "sim/child_run.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>

namespace sim {

namespace {

void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

ChildResult run_in_child(const std::function<std::string()>& fn) {
  std::fflush(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) return {false, std::string("pipe: ") + std::strerror(errno)};
  const pid_t pid = ::fork();
  if (pid < 0) return {false, std::string("fork: ") + std::strerror(errno)};
  if (pid == 0) {
    ::close(fds[0]);
    char status = '0';
    std::string out;
    try {
      out = fn();
      status = '1';
    } catch (const std::exception& e) {
      out = e.what();
    }
    write_all(fds[1], std::string(1, status) + out);
    std::fflush(nullptr);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string buf;
  char chunk[65536];
  ssize_t n;
  while ((n = ::read(fds[0], chunk, sizeof chunk)) > 0) buf.append(chunk, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  if (WIFSIGNALED(wstatus)) return {false, "child killed by signal " + std::to_string(WTERMSIG(wstatus))};
  if (buf.empty()) return {false, "child exited without a result"};
  return {buf[0] == '1', buf.substr(1)};
}

}  // namespace sim
