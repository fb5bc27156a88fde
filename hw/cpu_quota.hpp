// A CPU quota on one process through a cgroup of its own, as a node-slow
// fault needs: cgroup v2's cpu.max where the unified hierarchy has the cpu
// controller, else v1's cpu.cfs_quota_us where a v1 hierarchy holds it (a
// hybrid host, as many containers are). Needs root.
#pragma once

#include <sys/types.h>

#include <string>

namespace hw {

class CpuQuota {
 public:
  // The least quota the kernel takes: 1 ms of CPU per 100 ms period.
  static constexpr double kLeastCpus = 0.01;
  // Why no quota can be set here ("" when it can): no cpu controller, not
  // writable.
  static std::string unavailable_reason();

  // Creates the group `name`. Throws with the path and reason when it cannot.
  // REQUIRES: unavailable_reason() is "".
  explicit CpuQuota(const std::string &name);
  // Removes the group once its processes have ended (best effort).
  ~CpuQuota();
  CpuQuota(const CpuQuota &) = delete;
  CpuQuota &operator=(const CpuQuota &) = delete;

  // Moves `pid` (all its threads) into the group and lets it use `cpus` of
  // one CPU's time per 100 ms period; cpus <= 0: no limit. Throws when a write
  // fails. REQUIRES: cpus <= 0 or cpus >= kLeastCpus.
  void limit(pid_t pid, double cpus);

 private:
  std::string dir_;
  bool v2_;
};

}  // namespace hw
