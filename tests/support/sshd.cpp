#include "support/sshd.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "hw/socket_util.hpp"
#include "support/cli_runner.hpp"

namespace testsupport {

namespace {

constexpr const char* kSshd = "/usr/sbin/sshd";  // sshd refuses to start by a relative path

void must(const std::string& command) {
  const CliResult r = run_shell(command + " 2>&1");
  if (r.exit_code != 0) throw std::runtime_error(command + " failed: " + r.output);
}

int free_loopback_port() {
  const int fd = hw::listen_on("127.0.0.1", 0);
  const int port = hw::local_port(fd);
  ::close(fd);
  return port;
}

}  // namespace

std::string Sshd::unavailable_reason() {
  if (::access(kSshd, X_OK) != 0) return "needs Debian's openssh-server (/usr/sbin/sshd)";
  if (run_shell("command -v ssh-keygen >/dev/null && command -v ssh >/dev/null").exit_code != 0)
    return "needs ssh and ssh-keygen (openssh-client)";
  return "";
}

Sshd::Sshd() : dir_(fresh_dir("sshd")), bin_(dir_ + "/bin") {
  must("ssh-keygen -q -t ed25519 -N '' -f " + dir_ + "/host_key");
  must("ssh-keygen -q -t ed25519 -N '' -f " + dir_ + "/id");
  must("cp " + dir_ + "/id.pub " + dir_ + "/authorized_keys && mkdir -p " + bin_);
  if (::geteuid() == 0) must("mkdir -p /run/sshd");  // its privilege separation directory
  const int port = free_loopback_port();
  const passwd* me = ::getpwuid(::geteuid());
  std::ofstream(dir_ + "/sshd_config") << "Port " << port << "\nListenAddress 127.0.0.1\nHostKey " << dir_
                                       << "/host_key\nPidFile " << dir_ << "/sshd.pid\nAuthorizedKeysFile " << dir_
                                       << "/authorized_keys\nStrictModes no\nUsePAM no\n"
                                          "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                                          "KbdInteractiveAuthentication no\nLogLevel ERROR\n";
  std::ofstream(dir_ + "/ssh_config") << "Host *\n  HostName 127.0.0.1\n  Port " << port << "\n  User "
                                      << (me ? me->pw_name : "root") << "\n  IdentityFile " << dir_
                                      << "/id\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
                                         "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n";
  std::ofstream(bin_ + "/ssh") << "#!/bin/sh\nexec /usr/bin/ssh -F " << dir_ << "/ssh_config \"$@\"\n";
  must("chmod +x " + bin_ + "/ssh");
  server_ = std::make_unique<ChildProcess>(std::vector<std::string>{kSshd, "-D", "-e", "-f", dir_ + "/sshd_config"});
  for (int tries = 0; run_shell(path_env() + " ssh -o BatchMode=yes mesh true 2>&1").exit_code != 0; ++tries) {
    if (tries == 50) throw std::runtime_error("sshd did not come up: " + server_->output());
    ::usleep(100 * 1000);
  }
}

Sshd::~Sshd() = default;  // the ChildProcess kills the server's process group

std::string Sshd::path_env() const {
  const char* path = std::getenv("PATH");
  return "PATH=" + bin_ + ":" + (path ? path : "/usr/bin:/bin");
}

}  // namespace testsupport
