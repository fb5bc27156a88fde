#include "sim/sim_runtime.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>

#include <memory>

#include "engine/error.hpp"

namespace sg4 = simgrid::s4u;

namespace sim {

namespace {

struct Envelope {
  int tag;
  engine::Payload payload;
};

}  // namespace

std::string mailbox_name(int src, int dst) { return "m" + std::to_string(src) + "-" + std::to_string(dst); }

SimRuntime::SimRuntime(int rank, const PlatformSpec& platform) : rank_(rank), platform_(platform) {
  for (int p = 0; p < world(); ++p) {
    peers_.push_back(Peer{platform.wire_between(rank, p), sg4::Host::by_name(platform.hosts[p]),
                          sg4::Mailbox::by_name(mailbox_name(rank, p)), sg4::Mailbox::by_name(mailbox_name(p, rank))});
  }
}

double SimRuntime::now() const { return sg4::Engine::get_clock(); }

void SimRuntime::sleep_for(double seconds) {
  if (seconds > 0) sg4::this_actor::sleep_for(seconds);
}

void SimRuntime::send(int dst, int tag, engine::Payload payload) {
  const Peer& peer = peers_.at(dst);
  const auto& wire = peer.wire;
  if (!wire) throw engine::PeerFailure(dst, "no cable from " + platform_.hosts[rank_]);
  if (!peer.host->is_on()) throw engine::PeerFailure(dst, "host is down");
  // The sender's software cost per message (syscall, doorbell, copy setup).
  sleep_for(wire->card.per_message_overhead_s);
  const double bytes = wire_bytes(wire->card, static_cast<double>(payload.size));
  auto* env = new Envelope{tag, std::move(payload)};
  peer.outbox->put_init(env, static_cast<uint64_t>(bytes))
      ->detach([](void* p) { delete static_cast<Envelope*>(p); });
}

engine::Payload SimRuntime::recv(int src, int tag, double timeout_s) {
  const double deadline = now() + timeout_s;
  auto& wanted = stash_[{src, tag}];
  auto* mbox = peers_.at(src).inbox;
  while (wanted.empty()) {
    const double left = deadline - now();
    if (left <= 0) throw engine::Timeout(src, tag, timeout_s);
    Envelope* raw = nullptr;
    try {
      // A transfer that already finished cannot block: take it without
      // arming a timeout, which would cost SimGrid a timer per message.
      if (mbox->ready())
        raw = mbox->get<Envelope>();
      else
        mbox->get_async<Envelope>(&raw)->wait_for(left);
    } catch (const simgrid::TimeoutException&) {
      throw engine::Timeout(src, tag, timeout_s);
    } catch (const simgrid::NetworkFailureException&) {
      throw engine::PeerFailure(src, "link failed during transfer");
    }
    std::unique_ptr<Envelope> env(raw);
    if (env->tag == tag) return std::move(env->payload);
    stash_[{src, env->tag}].push_back(std::move(env->payload));
  }
  engine::Payload p = std::move(wanted.front());
  wanted.pop_front();
  return p;
}

}  // namespace sim
