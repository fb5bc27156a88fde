// A real OpenSSH server (Debian's openssh-server) on 127.0.0.1 for a test's
// lifetime, with a throwaway host key and user key, and a directory holding an
// `ssh` that reaches it under any host name: put bin_dir() first on PATH and
// `launch --hostfile` runs its ranks through real ssh sessions.
#pragma once

#include <memory>
#include <string>

#include "support/child_process.hpp"

namespace testsupport {

class Sshd {
 public:
  // Why no server can run here ("" when it can): no sshd or ssh-keygen.
  static std::string unavailable_reason();

  Sshd();  // throws std::runtime_error when the server does not come up
  ~Sshd();
  Sshd(const Sshd&) = delete;
  Sshd& operator=(const Sshd&) = delete;

  const std::string& bin_dir() const { return bin_; }
  // "PATH=<bin_dir>:$PATH", for `env` before a command.
  std::string path_env() const;

 private:
  std::string dir_, bin_;
  std::unique_ptr<ChildProcess> server_;
};

}  // namespace testsupport
