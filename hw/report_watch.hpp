// Who is alive once a rank's run is over, for handing its results to the
// lowest live rank. A send cannot tell: a machine that lost power takes what
// is sent to it without a word. The heartbeat channel can: in this phase every
// rank beats kReportBeat there each heartbeat period, and a rank still in its
// run still sends its engine's heartbeats. A peer heard by neither for the
// heartbeat timeout, or whose connection closed, is gone.
#pragma once

#include <vector>

#include "engine/runtime.hpp"

namespace hw {

class ReportWatch {
 public:
  // How long poll() waits when there is nothing to do but wait.
  static constexpr double kPollS = 0.01;

  // REQUIRES: `beats` is this rank's heartbeat channel, its engine's heartbeat
  // loop over; it outlives this. Every peer is heard "now".
  ReportWatch(engine::Runtime& beats, double heartbeat_s, double timeout_s);

  // Beats when one is due and takes in what the peers sent, then waits `wait_s`.
  void poll(double wait_s);
  bool gone(int peer) const;
  // In its report phase: it gathers, or hands its own results on.
  bool reporting(int peer) const { return reporting_.at(peer); }
  // Polls until every peer has been heard in this phase or is gone, then gives
  // up the gone ones on `runtimes`: closing them will not wait on those.
  void give_up_the_gone(const std::vector<engine::Runtime*>& runtimes);

 private:
  void hear(int peer, int tag);

  engine::Runtime& beats_;
  double heartbeat_s_, timeout_s_;
  double start_s_, next_beat_s_;
  std::vector<double> heard_s_;
  std::vector<bool> reporting_, closed_;
};

}  // namespace hw
