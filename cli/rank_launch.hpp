// What every launch mode (--local, --hostfile, --netns) shares: the command
// line that starts one rank, and the hooks that apply faults on rank 0's clock.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/base/enums.hpp"
#include "engine/base/events.hpp"
#include "hw/launcher.hpp"

namespace cli {

// The command of rank `r` of `cluster` (meshinfer-node), with the extra
// `cards` and the plan's `strategy`, chosen once by the launch.
std::vector<std::string> node_argv(int r, const std::string& cluster, const std::string& scenario,
                                   const std::string& out, const std::vector<std::string>& cards,
                                   engine::Strategy strategy);

// Called every tick once rank 0's run clock has started: carries out what is
// due by `t_s` on that clock and passes each applied fault's event to `note`.
using ApplyDue = std::function<void(double t_s, const std::vector<pid_t>& pids,
                                    const std::function<void(const engine::RunEvent&)>& note)>;

// Hooks that run `apply` on rank 0's run clock (from its "run clock zero"
// line) and log each noted fault to `log` with the unix time, before it is
// carried out (hw::append_event), and on stderr.
hw::LaunchHooks faults_on_rank0_clock(const std::string& log, ApplyDue apply);

}  // namespace cli
