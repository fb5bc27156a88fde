#include "hw/faults/stack_failure.hpp"

#include <filesystem>
#include <fstream>

namespace hw {

StackFailureSwitch::StackFailureSwitch(const engine::Scenario& s, const std::string& dir)
    : path_(dir + "/rdma-stack-failed") {
  for (const engine::FaultSpec& f : s.faults)
    if (f.kind == engine::FaultKind::kRdmaStackFailure && !at_s_) at_s_ = f.at_s;
  if (at_s_) std::filesystem::remove(path_);  // left by an earlier run, it would fail this one at once
}

std::optional<engine::RunEvent> StackFailureSwitch::flip_due(double t_s) {
  if (!at_s_ || flipped_ || t_s < *at_s_) return std::nullopt;
  flipped_ = true;
  std::ofstream{path_};
  return engine::RunEvent{t_s, engine::to_string(engine::FaultKind::kRdmaStackFailure), "",
                          "every RDMA queue pair failed (softrdma's failure switch) until every rank restarts"};
}

}  // namespace hw
