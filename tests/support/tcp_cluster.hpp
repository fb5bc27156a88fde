// Starts `n` ranks as forked processes joined by TcpRuntime on loopback and
// returns what each rank's function returned (or the error that ended it).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/base/runtime.hpp"
#include "hw/tcp_runtime.hpp"
#include "sim/child_run.hpp"

namespace testsupport {

std::vector<sim::ChildResult> run_tcp_cluster(int n, const std::function<std::string(engine::Runtime&)>& fn,
                                              unsigned alarm_s = 300);
// The same with each rank's TcpOptions adjusted by `configure(rank, options)` first.
std::vector<sim::ChildResult> run_tcp_cluster(int n, const std::function<std::string(engine::Runtime&)>& fn,
                                              const std::function<void(int, hw::TcpOptions&)>& configure,
                                              unsigned alarm_s = 300);

}  // namespace testsupport
