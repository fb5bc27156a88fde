// The engine's view of the cluster during one epoch: logical ranks over the
// members still in the instance, tags fenced by the epoch so no message from
// an earlier configuration is ever matched, and waits that give up as soon
// as a member falls silent or the coordinator has moved on to a new epoch.
#pragma once

#include <stdexcept>
#include <vector>

#include "engine/base/runtime.hpp"
#include "engine/base/tags.hpp"
#include "engine/node/liveness.hpp"

namespace engine {

// The coordinator announced a newer epoch: stop and ask it what to do.
class Reconfigure : public std::runtime_error {
 public:
  Reconfigure() : std::runtime_error("the coordinator moved to a new epoch") {}
};

// Rank 0: every member waits on another, all alive (Liveness::stalled): a
// message was lost, and the step must run again.
class MessageLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class EpochRuntime : public ForwardingRuntime {
 public:
  // `members`: physical ranks, in logical order. REQUIRES: contains physical.rank().
  EpochRuntime(Runtime& physical, Liveness& m, std::vector<int> members, int epoch);

  int rank() const override { return rank_; }
  int world() const override { return static_cast<int>(members_.size()); }
  void send(int dst, int tag, Payload payload) override;
  // Throws PeerFailure naming the PHYSICAL rank of the member that failed.
  Payload recv(int src, int tag, double timeout_s) override;
  // Same waits and failures as recv.
  double run_flows(const Flows& flows, double timeout_s) override;

  const std::vector<int>& members() const { return members_; }

 private:
  int fenced(int tag) const { return tags::fenced(tag, epoch_); }
  // Calls `attempt(slice)` in slices of a heartbeat until it returns, checking
  // the cluster between slices; throws its Timeout after `timeout_s`.
  template <class Attempt>
  auto wait_on_members(double timeout_s, const Attempt& attempt);
  // Throws when waiting longer is pointless: a member is silent or refused, a member
  // reported one (seen by the coordinator), a newer epoch began, or (seen by
  // the coordinator) every member waits on another.
  void check_cluster();
  // Throws PeerFailure when the heartbeats refused a member (Liveness::refuse).
  void check_refused() const;

  Runtime& physical_ = inner_;
  Liveness& m_;
  std::vector<int> members_;
  int epoch_;
  int rank_;
  Flows physical_flows_;  // run_flows' translation, its buffers kept from one collective to the next
};

// Messages between `from` and `to` (both ways) go through `relay`.
struct Detour {
  std::int32_t from = -1, to = -1, relay = -1;
  bool operator==(const Detour&) const = default;
};

// Decisions and reports on tags::kControl.
struct ControlMessage {
  enum Kind : std::int32_t { kAbort = 1, kReconfigure = 2, kStop = 3 };
  Kind kind = kStop;
  std::int32_t epoch = 0;
  std::int32_t peer = -1;      // kAbort: the physical rank found failed
  std::int32_t strategy = 0;   // kReconfigure: a Strategy
  std::int32_t secondary = 0;  // kReconfigure: 1 once the instance runs on the secondary network
  std::vector<std::int32_t> members;
  std::vector<Detour> detours;  // kReconfigure: every detour in force (physical ranks)

  Payload encode() const;
  // Throws std::invalid_argument, saying why, unless `p` is a message of a
  // known kind whose strategy, flags and ranks (in [0, world)) are all valid.
  static ControlMessage decode(const Payload& p, int world);
};

// The next control message from `src`; one that does not decode fails `src`
// (PeerFailure naming it). Throws Timeout and PeerFailure as Runtime::recv.
ControlMessage receive_control(Runtime& rt, int src, double timeout_s);

}  // namespace engine
