#include "engine/node/metered_runtime.hpp"

#include <algorithm>

#include "engine/base/error.hpp"

namespace engine {

MeteredRuntime::MeteredRuntime(Runtime& inner, TrafficStats& stats)
    : ForwardingRuntime(inner), stats_(stats), relay_(inner.world(), -1) {
  stats_.bytes_to.assign(inner.world(), 0);
  stats_.messages_to.assign(inner.world(), 0);
  stats_.relayed.assign(inner.world() * inner.world(), 0);
}

void MeteredRuntime::count(int dst, std::uint64_t bytes) {
  const int hop = relay_[dst] >= 0 ? relay_[dst] : dst;
  stats_.bytes_to[hop] += bytes;
  stats_.messages_to[hop] += 1;
  if (hop != dst) stats_.relayed[hop * world() + dst] += bytes;
}

bool MeteredRuntime::route_via(int dst, int relay) {
  if (!inner_.route_via(dst, relay)) return false;
  relay_.at(dst) = relay;
  return true;
}

void MeteredRuntime::give_up(int peer, const std::string& why) {
  relay_.at(peer) = -1;
  inner_.give_up(peer, why);
}

bool MeteredRuntime::use_secondary_network() {
  if (!inner_.use_secondary_network()) return false;
  relay_.assign(relay_.size(), -1);
  return true;
}

void MeteredRuntime::send(int dst, int tag, Payload payload) {
  const double start = inner_.now();
  count(dst, payload.size);
  payload.sent_s = start;
  inner_.send(dst, tag, std::move(payload));
  stats_.comm_s += inner_.now() - start;
}

// Charges the time `wait(start)` took to communication, also when it throws.
template <class Wait>
auto MeteredRuntime::charged(const Wait& wait) {
  const double start = inner_.now();
  struct Charge {
    MeteredRuntime* self;
    double start;
    ~Charge() { self->stats_.comm_s += self->inner_.now() - start; }
  } charge{this, start};
  return wait(start);
}

// A wait that timed out waited all along: nothing was under way. (A node waits
// in slices of a heartbeat, so a long wait is many of these and then one that
// receives.)
template <class Wait>
auto MeteredRuntime::waiting(double start, const Wait& wait) {
  try {
    return wait();
  } catch (const Timeout&) {
    stats_.wait_s += inner_.now() - start;
    throw;
  }
}

Payload MeteredRuntime::recv(int src, int tag, double timeout_s) {
  return charged([&](double start) {
    Payload p = waiting(start, [&] { return inner_.recv(src, tag, timeout_s); });
    if (p.sent_s > start) stats_.wait_s += std::min(p.sent_s, inner_.now()) - start;
    return p;
  });
}

double MeteredRuntime::run_flows(const Flows& flows, double timeout_s) {
  return charged([&](double start) {
    const double waited = waiting(start, [&] { return inner_.run_flows(flows, timeout_s); });
    for (const FlowPhase& phase : flows.phases)
      for (const auto& [dst, bytes] : phase.sends) count(dst, bytes);
    stats_.wait_s += waited;
    return waited;
  });
}

}  // namespace engine
