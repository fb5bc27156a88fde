#include "hw/faults/packet_loss.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace hw {

using engine::FaultKind;

std::optional<Refusal> packet_loss_refusal(const engine::Scenario& s, bool softrdma, bool per_cable) {
  for (std::size_t i = 0; i < s.faults.size(); ++i) {
    const engine::FaultSpec& f = s.faults[i];
    if (f.kind != FaultKind::kRdmaPacketLoss) continue;
    if (!softrdma)
      return Refusal{fmt::format("/faults/{}/kind", i),
                     "rdma-packet-loss: only softrdma drops packets on purpose: launch --local N --rdma-device "
                     "rdma_lo, or launch --netns --netns-rdma (softrdma preloaded)"};
    if (!per_cable && !f.target.empty())
      return Refusal{fmt::format("/faults/{}/target", i),
                     "rdma-packet-loss: every rank's device here is rdma_lo, which cannot tell one cable from "
                     "another; give no target (every cable), or use launch --netns --netns-rdma"};
  }
  return std::nullopt;
}

PacketLossSwitch::PacketLossSwitch(const engine::Scenario& s, const std::string& dir, const CableEnds& cable_ends)
    : path_(dir + "/softrdma-faults") {
  for (const engine::FaultSpec& f : s.faults) {
    if (f.kind != FaultKind::kRdmaPacketLoss) continue;
    const std::string where = f.target.empty() ? "every RDMA cable" : f.target;
    const std::vector<std::string> ends = f.target.empty() ? std::vector<std::string>{"*"} : cable_ends(f);
    const std::string kind = engine::to_string(f.kind);
    steps_.push_back({f.at_s,
                      ends,
                      f.loss,
                      f.reorder,
                      {0, kind, f.target,
                       fmt::format("softrdma loses {:.3g}% and reorders {:.3g}% of the packets on {}", 100 * f.loss,
                                   100 * f.reorder, where)}});
    if (f.duration_s > 0)
      steps_.push_back({f.at_s + f.duration_s,
                        ends,
                        0,
                        0,
                        {0, kind + "-ended", f.target, "no packet lost or reordered on " + where}});
  }
  std::stable_sort(steps_.begin(), steps_.end(), [](const Step& x, const Step& y) { return x.at_s < y.at_s; });
  std::filesystem::remove(path_);  // left by an earlier run, it would start this one lossy
}

std::vector<engine::RunEvent> PacketLossSwitch::apply_due(double t_s) {
  std::vector<engine::RunEvent> applied;
  for (; next_ < steps_.size() && steps_[next_].at_s <= t_s; ++next_) {
    const Step& s = steps_[next_];
    for (const std::string& end : s.ends) rates_[end] = {s.loss, s.reorder};
    applied.push_back(s.event);
    applied.back().t_s = t_s;
  }
  if (!applied.empty()) write_file();
  return applied;
}

// Whole or not at all: a device reading it meanwhile sees the old file or the new one.
void PacketLossSwitch::write_file() const {
  const std::string partial = path_ + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    out << "# ADDRESS LOSS REORDER, written by meshinfer launch for the scenario's rdma-packet-loss\n";
    for (const auto& [end, rates] : rates_) out << fmt::format("{} {} {}\n", end, rates.first, rates.second);
  }
  std::filesystem::rename(partial, path_);
}

}  // namespace hw
