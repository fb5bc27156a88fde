// launch --hostfile through real ssh sessions (a throwaway OpenSSH server on
// loopback, tests/support/sshd): the ranks run as remote commands and report,
// and a timeout or Ctrl-C of the launcher ends the remote ranks too, leaving
// no process and no port behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "hw/socket_util.hpp"
#include "support/child_process.hpp"
#include "support/cli_runner.hpp"
#include "support/real_run.hpp"
#include "support/skip.hpp"
#include "support/sshd.hpp"

namespace {

using testing::HasSubstr;
using testsupport::ChildProcess;

class SshLaunch : public testing::Test {
 protected:
  void SetUp() override {
    const std::string why = testsupport::Sshd::unavailable_reason();
    if (!why.empty()) SKIP_UNLESS_CI_PROVIDES(true, why);  // scripts/install-deps installs openssh-server
    sshd_ = std::make_unique<testsupport::Sshd>();
    dir_ = testsupport::fresh_dir("ssh-launch");
  }

  // Two ranks on hosts mesh-0 and mesh-1, both reached over ssh (on this machine).
  std::string cluster() {
    nlohmann::json hosts = nlohmann::json::array();
    for (int r = 0; r < 2; ++r) hosts.push_back({{"ssh", "mesh-" + std::to_string(r)}, {"ips", {"127.0.0.1"}}});
    port_ = hw::free_port_pair();
    return testsupport::write_json(dir_, "cluster", {{"transport", "tcp"}, {"port", port_}, {"hosts", hosts}});
  }

  std::vector<std::string> launch_argv(const std::string& scenario, const std::string& timeout_s) {
    return {"env",     sshd_->path_env(), MESHINFER_BINARY, "launch",    scenario, "--hostfile",
            cluster(), "--out",           dir_ + "/out",    "--timeout", timeout_s};
  }

  // True once no process mentions this test's cluster file and its port is free (within 10 s).
  // ("[c]luster": the pattern does not match the shell that runs pgrep.)
  bool nothing_left() {
    for (int tries = 0; tries < 100; ++tries) {
      if (testsupport::run_shell("pgrep -f '" + dir_ + "/[c]luster.json' >/dev/null").exit_code != 0) {
        const int fd = hw::listen_on("127.0.0.1", port_);
        ::close(fd);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  std::unique_ptr<testsupport::Sshd> sshd_;
  std::string dir_;
  int port_ = 0;
};

TEST_F(SshLaunch, RanksRunAsRemoteCommandsAndRankZeroReports) {
  const std::string scenario = testsupport::write_json(dir_, "s", testsupport::small_scenario("ssh", 2, 2, 8));
  ChildProcess launch(launch_argv(scenario, "60"));
  ASSERT_EQ(launch.wait(90), 0) << launch.output();
  EXPECT_THAT(launch.output(), HasSubstr("[rank 1] rank 1: joined a world of 2"));
  const auto report = nlohmann::json::parse(testsupport::read_file(dir_ + "/out/report.json"));
  EXPECT_EQ(report["summary"]["requests"]["completed"], 2);
  EXPECT_TRUE(nothing_left());
}

TEST_F(SshLaunch, ATimeoutEndsTheRemoteRanksNotJustTheSshClients) {
  const std::string scenario = testsupport::write_json(dir_, "s", testsupport::small_scenario("ssh", 2, 2, 5000));
  ChildProcess launch(launch_argv(scenario, "12"));  // room for ssh and bootstrap on a busy machine
  ASSERT_NE(launch.wait_for_line("[rank 1] rank 1: joined", 30), "") << launch.output();
  EXPECT_NE(launch.wait(60), 0);
  EXPECT_THAT(launch.output(), HasSubstr("timed out after 12 s; every rank was killed"));
  EXPECT_TRUE(nothing_left()) << testsupport::run_shell("pgrep -af '" + dir_ + "'").output;
}

TEST_F(SshLaunch, CtrlCEndsTheRemoteRanksNotJustTheSshClients) {
  const std::string scenario = testsupport::write_json(dir_, "s", testsupport::small_scenario("ssh", 2, 2, 5000));
  ChildProcess launch(launch_argv(scenario, "120"));
  ASSERT_NE(launch.wait_for_line("[rank 1] rank 1: joined", 30), "") << launch.output();
  ASSERT_EQ(::kill(launch.pid(), SIGINT), 0);
  EXPECT_NE(launch.wait(60), 0);
  EXPECT_THAT(launch.output(), HasSubstr("interrupted; every rank was killed"));
  EXPECT_TRUE(nothing_left()) << testsupport::run_shell("pgrep -af '" + dir_ + "'").output;
}

}  // namespace
