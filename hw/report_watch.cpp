#include "hw/report_watch.hpp"

#include "engine/base/error.hpp"
#include "engine/base/tags.hpp"

namespace hw {

ReportWatch::ReportWatch(engine::Runtime& beats, double heartbeat_s, double timeout_s)
    : beats_(beats),
      heartbeat_s_(heartbeat_s),
      timeout_s_(timeout_s),
      start_s_(beats.now()),
      next_beat_s_(start_s_),
      heard_s_(beats.world(), start_s_),
      closed_(beats.world(), false) {}

void ReportWatch::poll(double wait_s) {
  const double now = beats_.now();
  for (int peer = 0; peer < beats_.world(); ++peer) {
    if (peer == beats_.rank() || closed_[peer]) continue;
    if (now >= next_beat_s_) {
      try {
        beats_.send(peer, engine::tags::kReportBeat, engine::Payload{});
      } catch (const engine::PeerFailure&) {
        closed_[peer] = true;
      }
    }
    hear(peer, engine::tags::kHeartbeat);
    hear(peer, engine::tags::kReportBeat);
  }
  if (now >= next_beat_s_) next_beat_s_ = now + heartbeat_s_;
  if (wait_s > 0) beats_.sleep_for(wait_s);
}

// Drains `peer`'s messages of `tag`: each one says it is alive.
void ReportWatch::hear(int peer, int tag) {
  try {
    for (;;) {
      beats_.recv(peer, tag, 0);
      heard_s_[peer] = beats_.now();
    }
  } catch (const engine::Timeout&) {
  } catch (const engine::PeerFailure&) {
    closed_[peer] = true;
  }
}

bool ReportWatch::gone(int peer) const { return closed_.at(peer) || beats_.now() - heard_s_.at(peer) > timeout_s_; }

bool ReportWatch::alive(int peer) {
  while (!gone(peer) && heard_s_.at(peer) == start_s_) poll(kPollS);  // ends: silence makes it gone
  return !gone(peer);
}

void ReportWatch::give_up_the_gone(const std::vector<engine::Runtime*>& runtimes) {
  for (int peer = 0; peer < beats_.world(); ++peer)
    if (peer != beats_.rank() && !alive(peer))
      for (engine::Runtime* rt : runtimes) rt->give_up(peer, "silent on the heartbeat channel after the run");
}

}  // namespace hw
