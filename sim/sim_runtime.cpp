#include "sim/sim_runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>
#include <utility>

#include "engine/base/error.hpp"
#include "sim/start_actor.hpp"

namespace sg4 = simgrid::s4u;

namespace sim {

namespace {

struct Envelope {
  int tag;
  int path;              // the sender's route to the receiver when sent (SimRuntime::Peer)
  std::uint64_t number;  // on that path
  engine::Payload payload;
};

// Not by suspending the node's actors: SimGrid would also suspend every
// transfer to them started meanwhile, and never resume those.
void hold_while_hung(const std::vector<double>& speed, int node) {
  constexpr double kPollS = 1e-3;
  while (speed[node] == 0) sg4::this_actor::sleep_for(kPollS);
}

}  // namespace

std::string mailbox_name(int src, int dst, int channel) {
  return "m" + std::to_string(src) + "-" + std::to_string(dst) + "c" + std::to_string(channel);
}

SimRuntime::SimRuntime(int rank, const PlatformSpec& platform, const std::vector<double>& speed, int channel,
                       FlowBoard* flows, double quiet_until_s, std::vector<Numbering>* numbering,
                       const bool* rdma_failed)
    : rank_(rank),
      channel_(channel),
      platform_(platform),
      speed_(speed),
      rdma_failed_(rdma_failed),
      quiet_until_s_(quiet_until_s),
      flows_(flows),
      numbering_(numbering) {
  for (int p = 0; p < world(); ++p) {
    Peer peer;
    peer.wire = platform.wire_between(rank, p);
    peer.host = peer.machine = sg4::Host::by_name(platform.hosts[p]);
    peer.outbox = sg4::Mailbox::by_name(mailbox_name(rank, p, channel));
    peer.inbox = sg4::Mailbox::by_name(mailbox_name(p, rank, channel));
    peers_.push_back(std::move(peer));
  }
}

SimRuntime::~SimRuntime() {
  // A receive still posted when the node stops is abandoned, not leaked.
  // Not while SimGrid kills this actor (its host died, or it is a daemon at
  // the end of the run): no simcall may be made then, and SimGrid complains
  // of a receive freed unfinished, so it is let go with the actor.
  bool killed = std::uncaught_exceptions() > 0;
  for (Peer& peer : peers_) {
    if (!peer.pending || peer.pending->get_state() != sg4::Activity::State::STARTED) continue;
    if (!killed) {
      try {
        peer.pending->cancel();
        continue;
      } catch (const simgrid::Exception&) {
        continue;  // its host or link died under it: there is nothing left to cancel
      } catch (const simgrid::ForcefulKillException&) {
        killed = true;  // an exception may not leave a destructor; the actor ends here anyway
      }
    }
    peer.pending.detach();
  }
}

double SimRuntime::now() const { return sg4::Engine::get_clock() + deferred_s_; }

void SimRuntime::wait_while_hung() const { hold_while_hung(speed_, rank_); }

void SimRuntime::sleep_for(double seconds) {
  if (seconds > 0) deferred_s_ += seconds;
  settle();
  wait_while_hung();
}

void SimRuntime::compute(double seconds) {
  wait_while_hung();
  pass(seconds / speed_[rank_]);
}

// Deferred only strictly before the quiet ends: at that moment a fault or the deadline acts.
void SimRuntime::pass(double seconds) {
  if (seconds > 0 && now() + seconds < quiet_until_s_)
    deferred_s_ += seconds;
  else
    sleep_for(seconds);
}

void SimRuntime::settle() {
  if (deferred_s_ > 0) sg4::this_actor::sleep_for(std::exchange(deferred_s_, 0.0));
}

bool SimRuntime::use_secondary_network() {
  if (!platform_.secondary) return false;
  settle();
  sg4::this_actor::set_host(sg4::Host::by_name(secondary_host(platform_.hosts[rank_])));
  on_secondary_ = true;
  reconnect_all();
  return true;
}

void SimRuntime::reconnect_all() {
  for (Peer& peer : peers_) {
    peer.route = nullptr;
    ++peer.path;
    peer.next_number = 0;
    for (Peer::Path& from : peer.from) {
      from.resumes = true;
      from.hole = false;
    }
  }
}

void SimRuntime::meet_rdma_failure(int peer) {
  if (!rdma_failed_ || !*rdma_failed_ || over_ip_ || on_secondary_) return;
  const auto& wire = peers_.at(peer).wire;
  if (!wire || wire->card.switched) return;
  over_ip_ = true;
  reconnect_all();
  throw engine::PeerFailure(peer, "RDMA queue pair failed: the RDMA stack failed (IP over the cables goes on)");
}

bool SimRuntime::route_via(int dst, int relay) {
  settle();
  const auto first = platform_.wire_between(rank_, relay), second = platform_.wire_between(relay, dst);
  if (on_secondary_ || relay == rank_ || relay == dst || !first || !second) return false;
  Peer& peer = peers_.at(dst);
  // The detour's first hop is an ordinary send to the relay's host, into a
  // mailbox of its own; one relay actor per detour keeps the messages in order.
  auto* hop = sg4::Mailbox::by_name(mailbox_name(rank_, dst, channel_) + "-via-" + std::to_string(relay));
  // Onward to the far end itself: a later detour replaces this one, it does not chain onto it.
  auto* onward = sg4::Mailbox::by_name(mailbox_name(rank_, dst, channel_));
  auto* far_end = sg4::Host::by_name(platform_.hosts[dst]);
  const engine::LinkCard card = second->card;
  const std::vector<double>* speed = &speed_;
  auto relay_actor = start_actor(
      hop->get_name(), sg4::Host::by_name(platform_.hosts[relay]), [hop, onward, far_end, card, speed, relay] {
        for (;;) {
          Envelope* env = nullptr;
          try {
            env = hop->get<Envelope>();
          } catch (const simgrid::NetworkFailureException&) {
            continue;  // lost on the first hop, as on a direct cable
          }
          hold_while_hung(*speed, relay);
          sg4::this_actor::sleep_for(card.per_message_overhead_s);  // the relay's own software cost
          // As on a direct send: what is sent to a dead host vanishes. (SimGrid
          // aborts the whole run on a transfer it is asked to start to one.)
          if (!far_end->is_on()) {
            delete env;
            continue;
          }
          const double bytes = engine::timed_bytes(card, static_cast<double>(env->payload.size));
          onward->put_init(env, static_cast<uint64_t>(bytes))->detach([](void* p) {
            delete static_cast<Envelope*>(p);
          });
        }
      });
  // A relay that is down forwards nothing: the detour stands, and what is
  // sent on it vanishes until detection notices the relay's silence.
  if (relay_actor) {
    relay_actor->daemonize();
    hop->set_receiver(relay_actor);
  }
  peer.wire = first;
  peer.host = sg4::Host::by_name(platform_.hosts[relay]);
  peer.outbox = hop;
  peer.route = nullptr;
  ++peer.path;
  peer.next_number = 0;
  peer.onward = card;
  if (flows_) peer.onward_route = &flows_->route(peer.host, far_end);
  return true;
}

void SimRuntime::send(int dst, int tag, engine::Payload payload) {
  settle();
  wait_while_hung();
  meet_rdma_failure(dst);
  Peer& peer = peers_.at(dst);
  if (!on_secondary_ && !peer.wire) throw engine::PeerFailure(dst, "no cable from " + platform_.hosts[rank_]);
  const engine::LinkCard& card = on_secondary_ ? *platform_.secondary : peer.wire->card;
  // The sender's software cost per message (syscall, doorbell, copy setup).
  sleep_for(card.per_message_overhead_s);
  // A send to a dead host is not refused, as on a real NIC: it vanishes, and
  // the silence is what failure detection notices. (Checked after the sleep:
  // the host may have died during it. SimGrid asserts that both ends of a
  // transfer it starts are on.)
  if (!peer.host->is_on()) return;
  const double bytes = engine::timed_bytes(card, static_cast<double>(payload.size));
  reconnect_if_broken(dst);
  auto* env = new Envelope{tag, peer.path, peer.next_number++, std::move(payload)};
  peer.outbox->put_init(env, static_cast<uint64_t>(bytes))->detach([](void* p) { delete static_cast<Envelope*>(p); });
}

engine::Payload SimRuntime::recv(int src, int tag, double timeout_s) {
  settle();
  wait_while_hung();
  if (auto waiting = inbox_.take(src, tag)) return std::move(*waiting);
  meet_rdma_failure(src);
  const double deadline = now() + timeout_s;
  Peer& peer = peers_.at(src);
  for (;;) {
    Envelope* raw = nullptr;
    try {
      if (!peer.pending && peer.inbox->ready()) {
        // A transfer that already finished cannot block: no timer needed.
        raw = peer.inbox->get<Envelope>();
      } else {
        if (!peer.pending)
          peer.pending = peer.inbox->get_async<Envelope>(reinterpret_cast<Envelope**>(&peer.pending_message));
        // One simcall either way (each is a round trip through SimGrid's maestro):
        // a poll tests, a wait waits (and returns at once on a finished transfer).
        const double left = deadline - now();
        const bool done = left <= 0 ? peer.pending->test() : sg4::Comm::wait_any_for({peer.pending}, left) >= 0;
        if (!done) throw engine::Timeout(src, tag, timeout_s);
        const bool delivered = peer.pending->get_state() == sg4::Activity::State::FINISHED;
        raw = delivered ? static_cast<Envelope*>(std::exchange(peer.pending_message, nullptr)) : nullptr;
        peer.pending = nullptr;
        if (!raw) continue;  // the transfer failed: the message is lost, as below
      }
    } catch (const simgrid::NetworkFailureException&) {
      // The cable died under this message: it is lost, as on an unreliable
      // (UC) queue pair. Silence, not this loss, is what detection acts on.
      peer.pending = nullptr;
      continue;
    }
    std::unique_ptr<Envelope> env(raw);
    wait_while_hung();
    if (!take_in_sequence(src, env->path, env->number)) continue;
    if (env->tag == tag) return std::move(env->payload);
    inbox_.put(src, env->tag, std::move(env->payload));
  }
}

void SimRuntime::reconnect_if_broken(int dst) {
  Peer& peer = peers_[dst];
  if (!numbering_ || (*numbering_)[rank_ * world() + dst].broken_path != peer.path) return;
  ++peer.path;
  peer.next_number = 0;
}

SimRuntime::Peer::Path& SimRuntime::path_from(int src, int path) {
  std::vector<Peer::Path>& from = peers_[src].from;
  if (static_cast<int>(from.size()) <= path) from.resize(path + 1);
  return from[path];
}

void SimRuntime::fail_at_gap(int src, int path, const std::string& why) {
  path_from(src, path).broken = true;
  Numbering& pair = (*numbering_)[src * world() + rank_];
  pair.broken_path = path;
  if (pair.account.gap_s < 0) pair.account.gap_s = now();
  throw engine::PeerFailure(src, why);
}

bool SimRuntime::take_in_sequence(int src, int path, std::uint64_t number) {
  if (!numbering_) return true;
  Peer::Path& on = path_from(src, path);
  if (on.broken) return false;
  if (std::exchange(on.resumes, false)) on.next = number;
  if (number != on.next)
    fail_at_gap(src, path,
                fmt::format("message {} arrived where message {} was expected (a message was lost)", number, on.next));
  if (on.hole) fail_at_gap(src, path, fmt::format("message {} arrived after a collective's was lost", number));
  engine::Sequence& account = (*numbering_)[src * world() + rank_].account;
  account.numbered += number + 1 - on.next;
  on.next = number + 1;
  ++account.taken;
  return true;
}

}  // namespace sim

namespace sim {

void SimRuntime::drop_waiting(const std::function<bool(int tag)>& stale) {
  inbox_.drop_if(stale);
  std::erase_if(flows_begun_, [&](const auto& begun) { return stale(begun.first); });
  if (flow_in_progress_ && stale(flow_in_progress_->first)) {
    flows_->leave(*flow_in_progress_);
    flow_in_progress_.reset();
  }
}

void SimRuntime::resolve(const engine::Flows& flows, FlowPart& part) {
  part.sends.resize(flows.phases.size());
  part.receives.resize(flows.phases.size());
  for (std::size_t k = 0; k < flows.phases.size(); ++k) {
    part.sends[k].clear();
    for (const auto& [dst, size] : flows.phases[k].sends) {
      Peer& peer = peers_.at(dst);
      if (!on_secondary_ && !peer.wire) throw engine::PeerFailure(dst, "no cable from " + platform_.hosts[rank_]);
      const engine::LinkCard& card = on_secondary_ ? *platform_.secondary : peer.wire->card;
      reconnect_if_broken(dst);
      if (!peer.route) peer.route = &flows_->route(sg4::this_actor::get_host(), peer.host);
      // What is sent to a dead host vanishes, as on the message level.
      FlowMessage m;
      m.dst = dst;
      m.overhead_s = card.per_message_overhead_s;
      m.path = peer.path;
      m.hops[0] = {peer.host->is_on() ? peer.route : nullptr, engine::timed_bytes(card, double(size))};
      if (peer.onward) {
        m.hop_count = 2;
        m.relay_overhead_s = peer.onward->per_message_overhead_s;
        m.hops[1] = {peer.machine->is_on() ? peer.onward_route : nullptr,
                     engine::timed_bytes(*peer.onward, double(size))};
      }
      part.sends[k].push_back(m);
    }
    part.receives[k] = flows.phases[k].receives;
  }
  part.arrived_s = now();
}

std::pair<int, int> SimRuntime::lost_message(const FlowBoard::Collective& c) const {
  if (flows_->state_changes() == c.changes_when_opened) return {-1, 0};  // every link and host held since it began
  const int world = static_cast<int>(c.parts.size());
  for (int src : c.members) {
    if (src == rank_) continue;
    const FlowPart& part = c.parts[src];
    for (std::size_t k = 0; k < part.sends.size(); ++k)
      for (const FlowMessage& m : part.sends[k])
        if (m.dst == rank_ &&
            flows_->lost(peers_.at(src).machine, m, part.arrived_s, c.timing.arrival_s.at(k)[rank_ * world + src]))
          return {src, m.path};
  }
  return {-1, 0};
}

// The gap shows when a later message on the path arrives, as on the message level.
std::pair<int, int> SimRuntime::holed_sender(const FlowBoard::Collective& c) {
  if (!numbering_) return {-1, 0};
  for (int src : c.members) {
    if (src == rank_) continue;
    for (const auto& phase : c.parts[src].sends)
      for (const FlowMessage& m : phase)
        if (m.dst == rank_ && path_from(src, m.path).hole) return {src, m.path};
  }
  return {-1, 0};
}

// Not settled first: the board times a collective from the members' arrival
// times, so a member posts its part at its own time, deferred time and all,
// and SimGrid's clock need not reach it.
double SimRuntime::run_flows(const engine::Flows& flows, double timeout_s) {
  wait_while_hung();
  for (int m : flows.members)
    if (m != rank_) meet_rdma_failure(m);
  const double arrived = now(), deadline = arrived + timeout_s;
  if (!flow_in_progress_ || flow_in_progress_->first != flows.tag) {
    if (flow_in_progress_) flows_->leave(*flow_in_progress_);
    flow_in_progress_ = FlowBoard::Key{flows.tag, flows_begun_[flows.tag]++};
    FlowBoard::Collective& c = flows_->join(*flow_in_progress_, flows.members);
    resolve(flows, c.parts[rank_]);
    flows_->arrived(c, rank_);
  }
  FlowBoard::Collective& c = flows_->join(*flow_in_progress_, flows.members);
  // Past the deadline before its messages arrive: it waits on its last source.
  const auto waits_on = [](const engine::Flows& f) {
    for (auto phase = f.phases.rbegin(); phase != f.phases.rend(); ++phase)
      if (!phase->receives.empty()) return phase->receives.back();
    return f.members.front();
  };
  const auto give_up = [&](int peer) {
    sleep_for(deadline - now());
    throw engine::Timeout(peer, flows.tag, timeout_s);
  };
  while (!c.timed) {
    const bool woken = flows_->wait(rank_, deadline);
    // Waiting for the others' parts takes none of this engine's time: it is
    // still where it arrived, unless SimGrid's clock has passed that.
    deferred_s_ = std::max(0.0, arrived - sg4::Engine::get_clock());
    if (!woken && !c.timed)
      for (int m : c.members)
        if (c.parts[m].arrived_s < 0) throw engine::Timeout(m, flows.tag, timeout_s);
  }
  for (;;) {
    double& done = c.timing.done_s[rank_];
    if (done <= now()) {
      const auto [lost, path] = lost_message(c);
      if (lost < 0) break;
      // The message is lost: this collective waits for it in vain, and the sender's next message here shows the gap.
      if (numbering_) path_from(lost, path).hole = true;
      done = kNever;
      c.timing.blocked_on[rank_] = lost;
    }
    if (done > deadline) give_up(c.timing.blocked_on[rank_] >= 0 ? c.timing.blocked_on[rank_] : waits_on(flows));
    pass(done - now());
  }
  double last_arrival = 0;
  for (int m : c.members) last_arrival = std::max(last_arrival, c.parts[m].arrived_s);
  const double waited = std::max(0.0, last_arrival - c.parts[rank_].arrived_s);
  const auto [holed, path] = holed_sender(c);
  flows_->leave(*flow_in_progress_);
  flow_in_progress_.reset();
  if (holed >= 0) fail_at_gap(holed, path, "a collective's message arrived after an earlier one was lost");
  return waited;
}

}  // namespace sim
