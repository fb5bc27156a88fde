#include "engine/node/delayed_runtime.hpp"

#include <algorithm>
#include <limits>

#include "engine/base/error.hpp"

namespace engine {

namespace {
constexpr double kNever = std::numeric_limits<double>::infinity();
}

std::vector<AddedLatency> added_latencies(const Scenario& s, int rank) {
  std::vector<AddedLatency> out;
  for (const FaultSpec& f : s.faults) {
    if (f.kind != FaultKind::kLinkDegrade || f.added_latency_s <= 0 || (f.node != rank && f.peer != rank)) continue;
    out.push_back({f.node == rank ? f.peer : f.node, f.at_s, f.duration_s > 0 ? f.at_s + f.duration_s : kNever,
                   f.added_latency_s});
  }
  return out;
}

DelayedRuntime::DelayedRuntime(Runtime& inner, std::vector<AddedLatency> delays)
    : ForwardingRuntime(inner), delays_(std::move(delays)), held_(inner.world()), unreachable_(inner.world(), false) {}

DelayedRuntime::~DelayedRuntime() {
  try {
    flush();
  } catch (...) {  // a destructor does not throw; the peers see what did not arrive
  }
}

double DelayedRuntime::latency_to(int dst, double t) const {
  double sum = 0;  // overlapping degrades add up, as they do on the simulated cable
  for (const AddedLatency& d : delays_)
    if (d.peer == dst && t >= d.from_s && t < d.until_s) sum += d.latency_s;
  return sum;
}

void DelayedRuntime::hand_on_due() {
  const double t = inner_.now();
  for (int dst = 0; dst < static_cast<int>(held_.size()); ++dst) {
    auto& q = held_[dst];
    try {
      for (; !q.empty() && q.front().due_s <= t; q.pop_front())
        inner_.send(dst, q.front().tag, std::move(q.front().payload));
    } catch (const PeerFailure&) {
      q.clear();  // the inner runtime fails the next send to it
      unreachable_[dst] = true;
    }
  }
}

double DelayedRuntime::next_due() const {
  double next = kNever;
  for (const auto& q : held_)
    if (!q.empty()) next = std::min(next, q.front().due_s);
  return next;
}

void DelayedRuntime::spend(double seconds, void (Runtime::*pass)(double)) {
  const double end = inner_.now() + seconds;
  for (;;) {
    hand_on_due();
    const double until = std::min(end, next_due());
    (inner_.*pass)(std::max(0.0, until - inner_.now()));
    if (until >= end) break;
  }
  hand_on_due();
}

void DelayedRuntime::sleep_for(double seconds) { spend(seconds, &Runtime::sleep_for); }

void DelayedRuntime::compute(double seconds) { spend(seconds, &Runtime::compute); }

void DelayedRuntime::flush() {
  while (next_due() < kNever) spend(std::max(0.0, next_due() - inner_.now()), &Runtime::sleep_for);
}

void DelayedRuntime::send(int dst, int tag, Payload payload) {
  hand_on_due();
  const double t = inner_.now(), latency = latency_to(dst, t);
  // Behind messages still held for `dst`, even once the latency is gone: in order.
  if ((latency <= 0 && held_.at(dst).empty()) || unreachable_[dst]) return inner_.send(dst, tag, std::move(payload));
  held_[dst].push_back({t + latency, tag, std::move(payload)});
}

Payload DelayedRuntime::recv(int src, int tag, double timeout_s) {
  const double end = inner_.now() + timeout_s;
  for (;;) {
    hand_on_due();
    const double next = next_due();
    if (next >= end) return inner_.recv(src, tag, std::max(0.0, end - inner_.now()));
    try {
      return inner_.recv(src, tag, std::max(0.0, next - inner_.now()));
    } catch (const Timeout&) {  // a held message fell due first: hand it on, wait on
    }
  }
}

}  // namespace engine
