// Who is alive once a rank's run is over, for handing its results to the
// lowest live rank. A send cannot tell: a machine that lost power takes what
// is sent to it without a word. The heartbeat channel can: after its run every
// rank beats kReportBeat there each heartbeat period, and a rank still in its
// run still sends its engine's heartbeats. A peer heard by neither for the
// heartbeat timeout, or whose connection closed, is gone.
#pragma once

#include <vector>

#include "engine/base/runtime.hpp"

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
  // Polls until `peer` is heard from or gone; true when it was heard.
  bool alive(int peer);
  bool gone(int peer) const;
  // Polls until every peer is heard from or gone, then gives up the gone ones
  // on `runtimes`: closing them will not wait on those.
  void give_up_the_gone(const std::vector<engine::Runtime*>& runtimes);

 private:
  void hear(int peer, int tag);

  engine::Runtime& beats_;
  double heartbeat_s_, timeout_s_;
  double start_s_, next_beat_s_;
  std::vector<double> heard_s_;  // start_s_: not heard since this watch began
  std::vector<bool> closed_;
};

}  // namespace hw
