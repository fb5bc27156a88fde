// What one node knows of its peers' liveness, learnt from heartbeats. The
// node's heartbeat loop writes it and its main loop reads it: in a real
// process they are two threads, so the tables are under a lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/base/runtime.hpp"

namespace engine {

class Liveness {
 public:
  Liveness(int world, double heartbeat_s, double timeout_s);
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  // `ages`: how long ago `peer` last heard each node (its gossip), when known;
  // `waited_s`: how long its engine had been waiting in a receive (negative: it was not).
  void heard(int peer, double now, int epoch, const std::vector<float>& ages = {}, double waited_s = -1);
  // The local heartbeat loop ran at `now`. After a gap (this node was frozen),
  // silence is only counted from the moment it listens again.
  void beat(double now);
  // `peer` sent what no member sends (a malformed heartbeat): it is failed
  // for good, with `why`. The first reason stays.
  void refuse(int peer, const std::string& why);
  // Why `peer` was refused; empty when it was not.
  std::string refused(int peer) const;
  bool any_refused() const { return any_refused_; }
  // Refused, or silent for longer than the timeout while this node was listening.
  bool suspected(int peer, double now) const;
  // Seconds since anyone still heard from `peer`: this node directly, or a
  // member that is not itself suspected, by its gossip. A node that is down
  // is stale everywhere; one behind a dead cable is fresh for someone.
  double staleness(int peer, double now) const;
  // `peer` is down (crashed, hung or refused) rather than cut off: nobody hears it
  // while some other node is still heard. False when nobody else is heard
  // either, as when the whole fabric fails.
  bool down(int peer, double now, int self) const;
  // What this node's heartbeats gossip: how long ago it heard each node.
  std::vector<float> ages(double now) const;
  // This node's engine waits in a receive since `since` (negative: it does not).
  void set_waiting_since(double since);
  // How long this node's engine has waited in its receive (negative: it does
  // not wait; 0: its wait began at or after `now`).
  double waited(double now) const;
  // Every one of `members` (this node `self` too) has waited in a receive of
  // `epoch` for longer than the timeout, or is still in an older epoch (its
  // decision is lost), by its last heartbeat, and none is silent: nobody
  // computes or sends what the others wait for, so a message was lost on a
  // cable that works again (UC drops it without a word).
  bool stalled(const std::vector<int>& members, int self, int epoch, double now) const;
  // Messages to `peer` now go through `relay`: the heartbeat loop follows,
  // and the peer gets a fresh timeout to be heard through the detour.
  void set_relay(int peer, int relay, double now);
  int relay(int peer) const;
  // The highest epoch rank 0 has announced: a newer one means "reconfigure".
  int coordinator_epoch() const { return coordinator_epoch_; }

  int epoch() const { return epoch_; }
  void set_epoch(int e) { epoch_ = e; }
  // This node's engine left the instance: its heartbeats stop, so the others
  // notice it is gone instead of waiting on a silent but "alive" peer.
  bool left() const { return left_; }
  void leave() { left_ = true; }
  // The instance moved to the secondary network at `now`: the heartbeat loop
  // follows, and every peer gets a fresh timeout to be heard on it.
  bool on_secondary() const { return on_secondary_; }
  void set_on_secondary(double now);
  double heartbeat_s() const { return heartbeat_s_; }
  double timeout_s() const { return timeout_s_; }
  int world() const { return static_cast<int>(last_heard_.size()); }

 private:
  bool suspected_locked(int peer, double now) const;
  double staleness_locked(int peer, double now) const;

  mutable std::mutex mu_;  // guards the tables and times below
  std::vector<double> last_heard_;
  std::vector<std::vector<double>> heard_by_;  // [m][q]: when m last heard q, by m's gossip
  std::vector<int> relay_;                     // per peer: the relay of its detour, or -1
  std::vector<int> epoch_of_;                  // per peer: the epoch of its last heartbeat
  std::vector<double> waited_;                 // per peer: its wait in a receive by that heartbeat, or -1
  std::vector<std::string> refused_;           // per peer: why it was refused, or empty
  double last_beat_ = 0, listening_since_ = 0;
  const double heartbeat_s_, timeout_s_;
  std::atomic<int> epoch_ = 0;
  std::atomic<int> coordinator_epoch_ = 0;
  std::atomic<bool> on_secondary_ = false;
  std::atomic<bool> left_ = false;
  std::atomic<bool> any_refused_ = false;
  // Set around every receive of the engine's, so without the lock: locking
  // took more of a message-level run than the rest of EpochRuntime::recv.
  std::atomic<double> waiting_since_ = -1;
};

// A heartbeat: the sender's epoch, how long its engine has waited in a
// receive, then how long ago it heard each node.
struct Heartbeat {
  std::int32_t epoch = 0;
  float waited_s = -1;  // negative: not waiting
  std::vector<float> ages;

  Payload encode() const;
  // The beat of a `world`-node cluster's member, every value bounded: an epoch
  // in [0, own_epoch + tags::kFencedEpochs), finite times, no negative age.
  // Throws std::invalid_argument saying which value is wrong.
  static Heartbeat decode(const Payload& p, int world, int own_epoch);
};

// Every heartbeat period: tell every peer this node is alive (with its
// epoch) and note who was heard, until the node leaves the instance. Run it
// beside the node's main loop, on a runtime channel of its own. A malformed
// heartbeat refuses its sender (Liveness::refuse).
void run_heartbeats(Runtime& rt, Liveness& m);

}  // namespace engine
