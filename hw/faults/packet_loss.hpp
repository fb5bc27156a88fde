// A scenario's rdma-packet-loss on real processes that use softrdma: the
// launcher points every rank's device at one file (SOFTRDMA_FAULT_FILE) and
// rewrites it at each fault's start and end on the run's clock; each device
// takes the rates of its interface's IPv4 address, or of "*" (every device).
// The rdma transport resends nothing: the first frame lost or out of order
// ends the link to that peer, and the scenario's policy takes over.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/events.hpp"
#include "engine/input/scenario.hpp"
#include "hw/faults/netns_faults.hpp"

namespace hw {

// Why `s`'s rdma-packet-loss faults cannot be carried out (nothing when they
// can): `softrdma` false when the ranks do not talk RDMA over softrdma,
// `per_cable` false when one device carries every cable (rdma_lo).
std::optional<Refusal> packet_loss_refusal(const engine::Scenario& s, bool softrdma, bool per_cable);

class PacketLossSwitch {
 public:
  // The IPv4 addresses of the devices at both ends of fault f's cable.
  using CableEnds = std::function<std::vector<std::string>(const engine::FaultSpec& f)>;
  // The steps of `s`'s rdma-packet-loss faults, the file in `dir` (removed now
  // if an earlier run left it). A fault without a target reaches every device
  // ("*"); `cable_ends` is asked only for faults with one.
  // REQUIRES: !packet_loss_refusal(s, true, ...); cable_ends set if a fault has a target.
  PacketLossSwitch(const engine::Scenario& s, const std::string& dir, const CableEnds& cable_ends);

  bool armed() const { return !steps_.empty(); }
  // NAME=VALUE to put in every rank's environment.
  std::string setting() const { return "SOFTRDMA_FAULT_FILE=" + path_; }
  // Rewrites the file for every step due by `t_s` on the run's clock; the
  // event of each such step (at t_s).
  std::vector<engine::RunEvent> apply_due(double t_s);

 private:
  struct Step {
    double at_s;
    std::vector<std::string> ends;
    double loss, reorder;
    engine::RunEvent event;
  };
  void write_file() const;

  std::string path_;
  std::vector<Step> steps_;  // by time
  std::size_t next_ = 0;
  std::map<std::string, std::pair<double, double>> rates_;  // by device address: loss, reorder
};

}  // namespace hw
