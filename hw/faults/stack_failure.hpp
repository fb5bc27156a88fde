// A scenario's rdma-stack-failure on real processes that use softrdma: the
// launcher points every rank's device at one switch file (SOFTRDMA_FAIL_FILE)
// and creates it at the fault's time on the run's clock; each rank's device
// then fails every queue pair and hides itself until the process restarts,
// as macOS's RDMA stack fails (docs/reference-facts.md#thunderbolt-instability).
// The interfaces, and IP over them, stay up.
#pragma once

#include <optional>
#include <string>

#include "engine/base/events.hpp"
#include "engine/input/scenario.hpp"
#include "hw/faults/netns_faults.hpp"

namespace hw {

// Why `s`'s rdma-stack-failure that IP survives cannot be carried out on a
// netns mesh (nothing when it can): `softrdma` false when the ranks talk TCP
// over the veths, which such a failure leaves alone.
std::optional<Refusal> ip_surviving_stack_failure_refusal(const engine::Scenario& s, bool softrdma);

class StackFailureSwitch {
 public:
  // The switch for `s`'s first rdma-stack-failure, its file in `dir`
  // (removed now if an earlier run left it); not armed when `s` has none.
  // `ip_survives_only`: its first that IP survives (launch --netns, whose
  // veths carry out the others: NetnsFaults).
  StackFailureSwitch(const engine::Scenario& s, const std::string& dir, bool ip_survives_only = false);

  bool armed() const { return at_s_.has_value(); }
  // NAME=VALUE to put in every rank's environment.
  std::string setting() const { return "SOFTRDMA_FAIL_FILE=" + path_; }
  // Creates the file once `t_s` on the run's clock reaches the fault's time;
  // the fault's event (at t_s) when it did so now.
  std::optional<engine::RunEvent> flip_due(double t_s);

 private:
  std::optional<double> at_s_;
  std::string path_;
  bool flipped_ = false;
};

}  // namespace hw
