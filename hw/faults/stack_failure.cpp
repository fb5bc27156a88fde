#include "hw/faults/stack_failure.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

namespace hw {

std::optional<Refusal> ip_surviving_stack_failure_refusal(const engine::Scenario& s, bool softrdma) {
  for (std::size_t i = 0; i < s.faults.size(); ++i)
    if (s.faults[i].ip_survives && !softrdma)
      return Refusal{fmt::format("/faults/{}/ip_survives", i),
                     "an RDMA stack failure that IP survives fails softrdma's devices only, and these ranks talk TCP "
                     "over the veths, which it leaves alone: add --netns-rdma (softrdma preloaded)"};
  return std::nullopt;
}

StackFailureSwitch::StackFailureSwitch(const engine::Scenario& s, const std::string& dir, bool ip_survives_only)
    : path_(dir + "/rdma-stack-failed") {
  for (const engine::FaultSpec& f : s.faults)
    if (f.kind == engine::FaultKind::kRdmaStackFailure && (f.ip_survives || !ip_survives_only) && !at_s_)
      at_s_ = f.at_s;
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
