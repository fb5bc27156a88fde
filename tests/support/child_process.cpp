#include "support/child_process.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "hw/os.hpp"

namespace testsupport {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv) {
  int fds[2];
  hw::pipe_cloexec(fds);
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);
  ::close(fds[1]);
  fd_ = fds[0];
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) ::close(fd_);
}

bool ChildProcess::read_some(double timeout_s) {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  const int n = ::poll(&p, 1, static_cast<int>(timeout_s * 1000));
  if (n <= 0) return true;
  char buf[4096];
  const ssize_t got = ::read(fd_, buf, sizeof buf);
  if (got < 0 && errno == EINTR) return true;
  if (got <= 0) {
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  output_.append(buf, static_cast<std::size_t>(got));
  return true;
}

std::string ChildProcess::wait_for_line(const std::string& needle, double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const std::size_t at = output_.find(needle);
    const std::size_t end = at == std::string::npos ? at : output_.find('\n', at);
    if (end != std::string::npos) {
      const std::size_t begin = output_.rfind('\n', at);
      return output_.substr(begin == std::string::npos ? 0 : begin + 1,
                            end - (begin == std::string::npos ? 0 : begin + 1));
    }
    const double left = timeout_s - seconds_since(start);
    if (left <= 0 || !read_some(std::min(left, 0.1))) return "";
  }
}

int ChildProcess::wait(double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  while (read_some(0.1) && seconds_since(start) < timeout_s) {
  }
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (seconds_since(start) >= timeout_s) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      reaped_ = true;
      return -1;
    }
    ::usleep(10000);
  }
  reaped_ = true;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  FILE* ps = ::popen(("ps -o stat= -p " + std::to_string(pid)).c_str(), "r");
  if (!ps) return false;
  char state[16] = "";
  const bool read = std::fgets(state, sizeof state, ps) != nullptr;
  ::pclose(ps);
  return !read || state[0] == 'Z';
}

}  // namespace testsupport
