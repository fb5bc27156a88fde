#include "engine/membership.hpp"

#include <cstring>

#include "engine/error.hpp"

namespace engine {

namespace {

constexpr int kHeartbeatTag = 1;

}  // namespace

Membership::Membership(int world, double heartbeat_s, double timeout_s)
    : last_heard_(world, 0.0), heartbeat_s_(heartbeat_s), timeout_s_(timeout_s) {}

void Membership::heard(int peer, double now, int epoch) {
  last_heard_.at(peer) = now;
  if (peer == 0 && epoch > coordinator_epoch_) coordinator_epoch_ = epoch;
}

void Membership::beat(double now) {
  if (now - last_beat_ > timeout_s_) listening_since_ = now;
  last_beat_ = now;
}

bool Membership::suspected(int peer, double now) const {
  return now - last_heard_.at(peer) > timeout_s_ && now - listening_since_ > timeout_s_;
}

void run_heartbeats(Runtime& rt, Membership& m) {
  bool moved = false;
  while (!m.left()) {
    if (m.on_secondary() && !moved) moved = rt.use_secondary_network();
    m.beat(rt.now());
    const std::int32_t epoch = m.epoch();
    std::byte bytes[sizeof epoch];
    std::memcpy(bytes, &epoch, sizeof epoch);
    for (int peer = 0; peer < rt.world(); ++peer) {
      if (peer == rt.rank()) continue;
      try {
        rt.send(peer, kHeartbeatTag, Payload::of(bytes));
      } catch (const PeerFailure&) {
        // Unreachable now; silence will make it suspected.
      }
      // Drain what arrived since the last beat, without waiting.
      for (;;) {
        try {
          const Payload p = rt.recv(peer, kHeartbeatTag, 0);
          std::int32_t their_epoch = 0;
          if (p.bytes.size() == sizeof their_epoch) std::memcpy(&their_epoch, p.bytes.data(), sizeof their_epoch);
          m.heard(peer, rt.now(), their_epoch);
        } catch (const Timeout&) {
          break;
        } catch (const PeerFailure&) {
          break;
        }
      }
    }
    rt.sleep_for(m.heartbeat_s());
  }
}

}  // namespace engine
