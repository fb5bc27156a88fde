// A node-slow's CPU quota on a real process: the process moves into its own
// cgroup, which holds the quota, and the quota lifts at the fault's end.
// Needs root and a cgroup hierarchy with the cpu controller (v2 or v1).
#include "hw/cpu_quota.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/child_process.hpp"
#include "support/skip.hpp"

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The quota the group of `pid` holds, from its cgroup files: "max"/"-1" when none.
std::string quota_of(pid_t pid, const std::string& name) {
  std::ifstream mounts("/proc/self/mounts");
  for (std::string dev, dir, type, options, rest;
       mounts >> dev >> dir >> type >> options && std::getline(mounts, rest);) {
    const std::string group = dir + "/" + name;
    if (read(group + "/cgroup.procs").find(std::to_string(pid)) == std::string::npos) continue;
    return type == "cgroup2" ? read(group + "/cpu.max") : read(group + "/cpu.cfs_quota_us");
  }
  return "not in the group";
}

bool group_exists(const std::string& name) {
  std::ifstream mounts("/proc/self/mounts");
  for (std::string dev, dir, type, options, rest;
       mounts >> dev >> dir >> type >> options && std::getline(mounts, rest);)
    if (type.starts_with("cgroup") && std::filesystem::exists(dir + "/" + name)) return true;
  return false;
}

TEST(CpuQuota, AProcessHeldToAFractionOfACpuGetsItBackWhenLifted) {
  const std::string why = hw::CpuQuota::unavailable_reason();
  if (!why.empty()) SKIP_UNLESS_CI_PROVIDES(::geteuid() == 0, why);
  testsupport::ChildProcess spinner({"sh", "-c", "while :; do :; done"});
  const std::string name = "meshinfer-test-" + std::to_string(::getpid());
  {
    hw::CpuQuota quota(name);
    quota.limit(spinner.pid(), 0.25);
    const std::string held = quota_of(spinner.pid(), name);
    EXPECT_TRUE(held == "25000 100000\n" || held == "25000\n") << held;
    quota.limit(spinner.pid(), 0);
    const std::string lifted = quota_of(spinner.pid(), name);
    EXPECT_TRUE(lifted == "max 100000\n" || lifted == "-1\n") << lifted;
    ::kill(spinner.pid(), SIGKILL);
    spinner.wait(10);
  }
  EXPECT_FALSE(group_exists(name)) << "the group outlived its quota";
}

}  // namespace
