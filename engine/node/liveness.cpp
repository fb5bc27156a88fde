#include "engine/node/liveness.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/base/error.hpp"
#include "engine/base/tags.hpp"

namespace engine {

Liveness::Liveness(int world, double heartbeat_s, double timeout_s)
    : last_heard_(world, 0.0),
      heard_by_(world, std::vector<double>(world, 0.0)),
      relay_(world, -1),
      epoch_of_(world, 0),
      waited_(world, -1),
      refused_(world),
      heartbeat_s_(heartbeat_s),
      timeout_s_(timeout_s) {}

void Liveness::heard(int peer, double now, int epoch, const std::vector<float>& ages, double waited_s) {
  std::lock_guard lock(mu_);
  last_heard_.at(peer) = now;
  epoch_of_[peer] = epoch;
  waited_[peer] = waited_s;
  if (peer == 0 && epoch > coordinator_epoch_) coordinator_epoch_ = epoch;
  for (std::size_t q = 0; q < ages.size() && q < heard_by_.size(); ++q) heard_by_[peer][q] = now - ages[q];
}

double Liveness::staleness(int peer, double now) const {
  std::lock_guard lock(mu_);
  return staleness_locked(peer, now);
}

double Liveness::staleness_locked(int peer, double now) const {
  double latest = last_heard_.at(peer);
  for (int m = 0; m < world(); ++m)
    if (m != peer && !suspected_locked(m, now)) latest = std::max(latest, heard_by_[m][peer]);
  return now - latest;
}

bool Liveness::down(int peer, double now, int self) const {
  std::lock_guard lock(mu_);
  // Half a timeout: a live peer is heard within two heartbeat periods by
  // someone; a dead one has been silent everywhere for a whole timeout.
  const auto fresh = [&](int p) { return staleness_locked(p, now) < timeout_s_ / 2; };
  if (!refused_.at(peer).empty()) return true;  // it is the node that failed, not a cable to it
  if (fresh(peer)) return false;
  for (int m = 0; m < world(); ++m)
    if (m != peer && m != self && fresh(m)) return true;
  return false;
}

std::vector<float> Liveness::ages(double now) const {
  std::lock_guard lock(mu_);
  std::vector<float> out;
  for (double t : last_heard_) out.push_back(static_cast<float>(now - t));
  return out;
}

void Liveness::set_waiting_since(double since) { waiting_since_ = since; }

double Liveness::waited(double now) const {
  const double since = waiting_since_;
  // Begun after `now`: the engine's clock is ahead of the heartbeats' (the simulator's deferred time).
  return since < 0 ? -1 : std::max(0.0, now - since);
}

bool Liveness::stalled(const std::vector<int>& members, int self, int epoch, double now) const {
  const double since = waiting_since_;
  if (since < 0 || now - since <= timeout_s_) return false;
  std::lock_guard lock(mu_);
  // A member still in an older epoch waits too: for the decision, which was lost.
  return std::all_of(members.begin(), members.end(), [&](int p) {
    return p == self || (!suspected_locked(p, now) &&
                         (epoch_of_.at(p) < epoch || (epoch_of_[p] == epoch && waited_[p] > timeout_s_)));
  });
}

void Liveness::set_relay(int peer, int relay, double now) {
  std::lock_guard lock(mu_);
  relay_.at(peer) = relay;
  last_heard_[peer] = now;
}

void Liveness::set_on_secondary(double now) {
  std::lock_guard lock(mu_);
  on_secondary_ = true;
  for (double& t : last_heard_) t = std::max(t, now);
}

int Liveness::relay(int peer) const {
  std::lock_guard lock(mu_);
  return relay_.at(peer);
}

void Liveness::beat(double now) {
  std::lock_guard lock(mu_);
  if (now - last_beat_ > timeout_s_) listening_since_ = now;
  last_beat_ = now;
}

void Liveness::refuse(int peer, const std::string& why) {
  std::lock_guard lock(mu_);
  if (refused_.at(peer).empty()) refused_[peer] = why;
  any_refused_ = true;
}

std::string Liveness::refused(int peer) const {
  std::lock_guard lock(mu_);
  return refused_.at(peer);
}

bool Liveness::suspected(int peer, double now) const {
  std::lock_guard lock(mu_);
  return suspected_locked(peer, now);
}

bool Liveness::suspected_locked(int peer, double now) const {
  if (!refused_.at(peer).empty()) return true;
  return now - last_heard_.at(peer) > timeout_s_ && now - listening_since_ > timeout_s_;
}

Payload Heartbeat::encode() const {
  std::vector<std::byte> bytes(sizeof epoch + (1 + ages.size()) * sizeof(float));
  std::memcpy(bytes.data(), &epoch, sizeof epoch);
  std::memcpy(bytes.data() + sizeof epoch, &waited_s, sizeof waited_s);
  std::memcpy(bytes.data() + sizeof epoch + sizeof waited_s, ages.data(), ages.size() * sizeof(float));
  return Payload::of(bytes);
}

Heartbeat Heartbeat::decode(const Payload& p, int world, int own_epoch) {
  Heartbeat b;
  constexpr std::size_t kHead = sizeof b.epoch + sizeof b.waited_s;
  if (world < 1 || p.bytes.size() != kHead + static_cast<std::size_t>(world) * sizeof(float))
    throw std::invalid_argument(fmt::format("{} bytes, not a heartbeat of {} nodes", p.bytes.size(), world));
  std::memcpy(&b.epoch, p.bytes.data(), sizeof b.epoch);
  std::memcpy(&b.waited_s, p.bytes.data() + sizeof b.epoch, sizeof b.waited_s);
  b.ages.resize(world);
  std::memcpy(b.ages.data(), p.bytes.data() + kHead, b.ages.size() * sizeof(float));
  // Beyond kFencedEpochs - 1 ahead, the sender's fenced tags would be mistaken for this node's.
  if (b.epoch < 0 || b.epoch - own_epoch >= tags::kFencedEpochs)
    throw std::invalid_argument(fmt::format("epoch {} (this node is in epoch {})", b.epoch, own_epoch));
  if (!std::isfinite(b.waited_s)) throw std::invalid_argument(fmt::format("waited {} s", b.waited_s));
  if (b.waited_s < 0) b.waited_s = -1;  // not waiting
  // A negative age would keep a node fresh into the future; a long one only says "long ago".
  for (std::size_t q = 0; q < b.ages.size(); ++q)
    if (!std::isfinite(b.ages[q]) || b.ages[q] < 0)
      throw std::invalid_argument(fmt::format("heard rank {} {} s ago", q, b.ages[q]));
  return b;
}

namespace {

// Sends `beat` to `peer` and takes in what it sent since the last one, without waiting.
void exchange(Runtime& rt, Liveness& m, int peer, const Payload& beat) {
  try {
    rt.send(peer, tags::kHeartbeat, beat);
  } catch (const PeerFailure&) {
    // Unreachable now; silence will make it suspected.
  }
  for (;;) {
    Payload p;
    try {
      p = rt.recv(peer, tags::kHeartbeat, 0);
    } catch (const Timeout&) {
      return;
    } catch (const PeerFailure&) {
      return;
    }
    if (!m.refused(peer).empty()) continue;  // failed already: its beats are drained, not believed
    try {
      const Heartbeat b = Heartbeat::decode(p, rt.world(), m.epoch());
      m.heard(peer, rt.now(), b.epoch, b.ages, b.waited_s);
    } catch (const std::invalid_argument& e) {
      m.refuse(peer, std::string("malformed heartbeat: ") + e.what());
    }
  }
}

}  // namespace

void run_heartbeats(Runtime& rt, Liveness& m) {
  bool moved = false;
  std::vector<int> routed(rt.world(), -1);
  while (!m.left()) {
    if (m.on_secondary() && !moved) moved = rt.use_secondary_network();
    for (int peer = 0; peer < rt.world(); ++peer)
      if (m.relay(peer) != routed[peer] && rt.route_via(peer, m.relay(peer))) routed[peer] = m.relay(peer);
    m.beat(rt.now());
    const Payload beat = Heartbeat{m.epoch(), static_cast<float>(m.waited(rt.now())), m.ages(rt.now())}.encode();
    for (int peer = 0; peer < rt.world(); ++peer) {
      if (peer == rt.rank()) continue;
      exchange(rt, m, peer, beat);
    }
    rt.sleep_for(m.heartbeat_s());
  }
}

}  // namespace engine
