#include "engine/metered_runtime.hpp"

#include <algorithm>

namespace engine {

MeteredRuntime::MeteredRuntime(Runtime& inner, TrafficStats& stats) : ForwardingRuntime(inner), stats_(stats) {
  stats_.bytes_to.assign(inner.world(), 0);
  stats_.messages_to.assign(inner.world(), 0);
}

void MeteredRuntime::send(int dst, int tag, Payload payload) {
  const double start = inner_.now();
  stats_.bytes_to[dst] += payload.size;
  stats_.messages_to[dst] += 1;
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

Payload MeteredRuntime::recv(int src, int tag, double timeout_s) {
  return charged([&](double start) {
    Payload p = inner_.recv(src, tag, timeout_s);
    if (p.sent_s > start) stats_.wait_s += std::min(p.sent_s, inner_.now()) - start;
    return p;
  });
}

double MeteredRuntime::run_flows(const Flows& flows, double timeout_s) {
  return charged([&](double) {
    const double waited = inner_.run_flows(flows, timeout_s);
    for (const FlowPhase& phase : flows.phases)
      for (const auto& [dst, bytes] : phase.sends) {
        stats_.bytes_to[dst] += bytes;
        stats_.messages_to[dst] += 1;
      }
    stats_.wait_s += waited;
    return waited;
  });
}

}  // namespace engine
