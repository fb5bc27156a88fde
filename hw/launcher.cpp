#include "hw/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "engine/report/report.hpp"
#include "hw/os.hpp"
#include "hw/socket_util.hpp"

namespace hw {

namespace {

volatile sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string shell_quote(const std::string& s) { return "'" + replace_all(s, "'", "'\\''") + "'"; }

// One child output stream, cut into prefixed lines.
struct Stream {
  int fd;
  FILE* to;
  int rank;
  const LaunchHooks* hooks;
  std::string prefix, partial;
  std::string* sink;  // when set, the output is kept here instead

  void line(const std::string& text) {
    std::fprintf(to, "%s%s\n", prefix.c_str(), text.c_str());
    if (hooks->on_line) hooks->on_line(rank, text);
  }

  // False at EOF.
  bool forward() {
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) return true;
    if (n > 0 && sink) {
      sink->append(buf, static_cast<std::size_t>(n));
      return true;
    }
    if (n > 0) {
      partial.append(buf, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = partial.find('\n')) != std::string::npos; partial.erase(0, nl + 1))
        line(partial.substr(0, nl));
      std::fflush(to);
      return true;
    }
    if (!partial.empty()) line(partial);
    std::fflush(to);
    ::close(fd);
    return false;
  }
};

int status_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

std::vector<std::string> rank_command(const ClusterSpec& c, int r, const std::string& exec_prefix,
                                      const std::vector<std::string>& command) {
  std::vector<std::string> argv;
  if (!exec_prefix.empty()) {
    std::istringstream words(
        replace_all(replace_all(exec_prefix, "{rank}", std::to_string(r)), "{host}", c.hosts.at(r).ssh));
    for (std::string w; words >> w;) argv.push_back(w);
  } else if (!c.is_local(r)) {
    std::string remote;
    for (const auto& a : command) remote += (remote.empty() ? "" : " ") + shell_quote(a);
    return {"ssh", "-o", "BatchMode=yes", c.hosts[r].ssh, remote};
  }
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

LaunchResult launch_processes(const std::vector<std::vector<std::string>>& argvs, double timeout_s, bool capture,
                              const LaunchHooks& hooks, const std::string& stdin_text,
                              const std::vector<std::vector<int>>& inherit) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  struct sigaction old_int {
  }, old_term{};
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  g_interrupted = 0;

  const int n = static_cast<int>(argvs.size());
  LaunchResult result;
  result.status.assign(n, -1);
  if (capture) {
    result.output.resize(n);
    result.errors.resize(n);
  }
  std::vector<pid_t> pids(n, -1);
  std::vector<Stream> streams;
  pid_t group = 0;
  // Starts rank r's process (again, for a restart: its inherited descriptors are closed by then).
  const auto start = [&](int r) {
    std::fflush(nullptr);
    int out[2], err[2], in[2] = {-1, -1};
    pipe_cloexec(out);
    pipe_cloexec(err);
    if (!stdin_text.empty()) {  // small: the pipe holds it whole before the child runs
      pipe_cloexec(in);
      const bool written =
          ::write(in[1], stdin_text.data(), stdin_text.size()) == static_cast<ssize_t>(stdin_text.size());
      ::close(in[1]);
      if (!written) throw std::runtime_error("cannot hand a rank its standard input");
    }
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::setpgid(0, group);
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::signal(SIGPIPE, SIG_DFL);  // tcp_socket may have ignored it here
      if (in[0] >= 0) ::dup2(in[0], STDIN_FILENO);
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      if (r < static_cast<int>(inherit.size()) && pids[r] < 0)
        for (int fd : inherit[r]) ::fcntl(fd, F_SETFD, 0);  // kept across exec, unlike every other
      std::vector<char*> args;
      for (const auto& a : argvs[r]) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      std::fprintf(stderr, "cannot start %s: %s\n", args[0], std::strerror(errno));
      ::_exit(127);
    }
    ::setpgid(pid, group);  // also here, so no signal can race the child's own call
    if (group == 0) group = pid;
    const bool again = pids[r] >= 0;
    pids[r] = pid;
    ::close(out[1]);
    ::close(err[1]);
    if (in[0] >= 0) ::close(in[0]);
    const std::string prefix = "[rank " + std::to_string(r) + "] ";
    streams.push_back({out[0], stdout, r, &hooks, prefix, {}, capture ? &result.output[r] : nullptr});
    streams.push_back({err[0], stderr, r, &hooks, prefix, {}, capture ? &result.errors[r] : nullptr});
    if (!capture) std::fprintf(stderr, "launch: rank %d is pid %d%s\n", r, pid, again ? " (started again)" : "");
  };
  for (int r = 0; r < n; ++r) start(r);
  std::fflush(stderr);
  for (const auto& fds : inherit)
    for (int fd : fds) ::close(fd);

  const Deadline deadline = deadline_in(timeout_s);
  int running = n;
  bool killed = false;
  while (running > 0 || !streams.empty()) {
    std::vector<pollfd> fds;
    for (const auto& s : streams) fds.push_back({s.fd, POLLIN, 0});
    // Ranks whose pipes have all closed are exiting: reap them within a
    // millisecond, not a tick later (it was 100 ms of every short run).
    const int tick_ms = hooks.on_tick ? 10 : 100;
    ::poll(fds.data(), fds.size(), streams.empty() ? 1 : tick_ms);
    for (std::size_t i = fds.size(); i-- > 0;)
      if (fds[i].revents && !streams[i].forward()) streams.erase(streams.begin() + static_cast<long>(i));
    for (int r = 0; r < n; ++r) {
      int status = 0;
      if (result.status[r] < 0 && ::waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        result.status[r] = status_code(status);
        --running;
      }
    }
    if (killed || running == 0) continue;
    if (hooks.on_tick) {
      std::vector<pid_t> live = pids;  // -1 once reaped: the pid may be someone else's by now
      for (int r = 0; r < n; ++r)
        if (result.status[r] >= 0) live[r] = -1;
      hooks.on_tick(live);
    }
    if (hooks.restart)
      for (int r : hooks.restart())
        if (result.status.at(r) >= 0) {
          start(r);
          result.status[r] = -1;
          ++running;
        }
    if (g_interrupted || std::chrono::steady_clock::now() >= deadline) {
      result.interrupted = g_interrupted;
      result.timed_out = !g_interrupted;
      ::kill(-group, SIGKILL);
      killed = true;
    }
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  return result;
}

int run_ranks(const std::vector<std::vector<std::string>>& argvs, double timeout_s, bool dry_run,
              const LaunchHooks& hooks, const std::string& stdin_text, const std::vector<std::vector<int>>& inherit) {
  if (dry_run) {
    for (const auto& argv : argvs) {
      std::string line;
      for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
      std::printf("%s\n", line.c_str());
    }
    return 0;
  }
  int reporter = -1;
  std::string outcome;
  LaunchHooks watched = hooks;
  watched.on_line = [&](int rank, const std::string& line) {
    if (line.rfind(engine::kOutcomePrefix, 0) == 0) {
      reporter = rank;
      outcome = line.substr(std::strlen(engine::kOutcomePrefix));
    }
    if (hooks.on_line) hooks.on_line(rank, line);
  };
  const LaunchResult r = launch_processes(argvs, timeout_s, false, watched, stdin_text, inherit);
  for (std::size_t k = 0; k < r.status.size(); ++k)
    if (r.status[k] != 0) std::fprintf(stderr, "launch: rank %zu ended with status %d\n", k, r.status[k]);
  if (r.timed_out) std::fprintf(stderr, "launch: timed out after %g s; every rank was killed\n", timeout_s);
  if (r.interrupted) std::fprintf(stderr, "launch: interrupted; every rank was killed\n");
  if (reporter < 0 || r.timed_out || r.interrupted) {
    if (r.status[0] != 0) std::fprintf(stderr, "launch: outcome: no report; exit %d\n", r.status[0]);
    return r.status[0];
  }
  std::fprintf(stderr, "launch: outcome (rank %d reported): %s; exit %d\n", reporter, outcome.c_str(),
               r.status[reporter]);
  return r.status[reporter];
}

}  // namespace hw
