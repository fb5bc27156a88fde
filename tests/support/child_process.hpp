// A child process in its own process group whose output (stdout and stderr
// together) the test reads as it comes. The destructor kills the whole group
// and reaps it, so a failing test leaves no process behind.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace testsupport {

class ChildProcess {
 public:
  explicit ChildProcess(const std::vector<std::string>& argv);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Reads until the output holds a whole line containing `needle` (returns
  // the first such line) or `timeout_s` passes or the output ends (returns "").
  std::string wait_for_line(const std::string& needle, double timeout_s);
  // Reads to the end and reaps: the exit code, 128 + signal, or -1 when it
  // had not ended after `timeout_s` (it is then killed).
  int wait(double timeout_s);
  const std::string& output() const { return output_; }
  pid_t pid() const { return pid_; }

 private:
  // Appends what arrives before the deadline; false at end of output.
  bool read_some(double timeout_s);

  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  std::string output_;
};

// True when the process `pid` has ended: it no longer exists, or it is a
// zombie waiting for a reaper (an orphan waits for init).
bool process_gone(pid_t pid);

}  // namespace testsupport
