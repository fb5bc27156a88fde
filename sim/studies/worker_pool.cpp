#include "sim/studies/worker_pool.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace sim {

namespace {

// A record on a worker's pipe: item index, ok flag, length, then the bytes.
void write_record(int fd, std::int32_t index, const ChildResult& r) {
  std::string rec(4 + 1 + 8, '\0');
  const std::uint64_t len = r.output.size();
  std::memcpy(rec.data(), &index, 4);
  rec[4] = r.ok ? 1 : 0;
  std::memcpy(rec.data() + 5, &len, 8);
  rec += r.output;
  for (std::size_t done = 0; done < rec.size();) {
    const ssize_t n = ::write(fd, rec.data() + done, rec.size() - done);
    if (n <= 0) ::_exit(3);
    done += static_cast<std::size_t>(n);
  }
}

// Takes the whole records in `buf` from `at` on into `out`; returns how many
// (a record still arriving stays for the next call).
int parse_records(const std::string& buf, std::size_t& at, std::vector<ChildResult>& out) {
  int parsed = 0;
  for (; at + 13 <= buf.size(); ++parsed) {
    std::int32_t index;
    std::uint64_t len;
    std::memcpy(&index, buf.data() + at, 4);
    std::memcpy(&len, buf.data() + at + 5, 8);
    if (index < 0 || static_cast<std::size_t>(index) >= out.size())
      throw std::runtime_error("worker pool: corrupt result record");
    if (at + 13 + len > buf.size()) break;
    out[index] = {buf[at + 4] == 1, buf.substr(at + 13, len)};
    at += 13 + len;
  }
  return parsed;
}

ProgressFn g_progress;  // see ReportProgress

void report(int done, int items) {
  if (g_progress) g_progress(done, items);
}

}  // namespace

ReportProgress::ReportProgress(ProgressFn fn) : previous_(std::move(g_progress)) { g_progress = std::move(fn); }
ReportProgress::~ReportProgress() { g_progress = std::move(previous_); }

std::vector<ChildResult> run_parallel(int items, int jobs, const std::function<std::string(int)>& fn) {
  std::vector<ChildResult> out(items, ChildResult{false, "worker died before reaching this item"});
  report(0, items);
  if (jobs <= 1) {
    for (int i = 0; i < items; ++i) {
      out[i] = run_in_child([&] { return fn(i); });
      report(i + 1, items);
    }
    return out;
  }
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  std::vector<pollfd> fds;
  for (int w = 0; w < jobs; ++w) {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::close(p[0]);
      for (int i = w; i < items; i += jobs) write_record(p[1], i, run_in_child([&] { return fn(i); }));
      ::_exit(0);
    }
    ::close(p[1]);
    pids.push_back(pid);
    fds.push_back(pollfd{p[0], POLLIN, 0});
  }
  // Drain every pipe as it fills, so no worker blocks on a full one.
  std::vector<std::string> bufs(jobs);
  std::vector<std::size_t> parsed(jobs, 0);
  int open = jobs, done = 0;
  char chunk[65536];
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) throw std::runtime_error("poll failed");
    for (int w = 0; w < jobs; ++w) {
      if (fds[w].fd < 0 || !(fds[w].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[w].fd, chunk, sizeof chunk);
      if (n > 0) {
        bufs[w].append(chunk, static_cast<std::size_t>(n));
        if (const int ended = parse_records(bufs[w], parsed[w], out); ended > 0) report(done += ended, items);
      } else {
        ::close(fds[w].fd);
        fds[w].fd = -1;
        --open;
      }
    }
  }
  for (pid_t pid : pids) ::waitpid(pid, nullptr, 0);
  for (int w = 0; w < jobs; ++w)
    if (parsed[w] != bufs[w].size()) throw std::runtime_error("worker pool: a result record ends early");
  return out;
}

std::vector<ChildResult> run_items(int items, const Workers& w, const std::function<std::string(int)>& fn) {
  if (w.merged) {
    if (static_cast<int>(w.merged->size()) != items)
      throw std::runtime_error("merge: the shards hold " + std::to_string(w.merged->size()) +
                               " results, the study has " + std::to_string(items) +
                               " items (not the same command or catalog?)");
    return *w.merged;
  }
  std::vector<int> mine;
  for (int i = 0; i < items; ++i)
    if (w.shard.owns(i)) mine.push_back(i);
  const auto ran = run_parallel(static_cast<int>(mine.size()), w.jobs, [&](int k) { return fn(mine[k]); });
  if (w.ran) w.ran->items = items;
  std::vector<ChildResult> out(items);
  for (int i = 0; i < items; ++i)
    out[i] = {false, "run by shard " + std::to_string(i % w.shard.count) + "/" + std::to_string(w.shard.count)};
  for (std::size_t k = 0; k < mine.size(); ++k) {
    out[mine[k]] = ran[k];
    if (w.ran) w.ran->results.emplace_back(mine[k], ran[k]);
  }
  return out;
}

}  // namespace sim
