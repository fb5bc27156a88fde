#include "engine/node/recovery.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/error.hpp"
#include "engine/node/epoch_runtime.hpp"

namespace engine {

namespace {

// The scenario restricted to `members` (physical ranks), to re-place the model on them.
Scenario restricted(const Scenario& s, const std::vector<int>& members) {
  Scenario r = s;
  r.nodes.clear();
  r.fabric.cables.clear();
  for (int p : members) r.nodes.push_back(s.nodes[p]);
  for (const Cable& c : s.fabric.cables) {
    const auto a = std::find(members.begin(), members.end(), c.a), b = std::find(members.begin(), members.end(), c.b);
    if (a == members.end() || b == members.end()) continue;
    Cable kept = c;
    kept.a = static_cast<int>(a - members.begin());
    kept.b = static_cast<int>(b - members.begin());
    r.fabric.cables.push_back(kept);
  }
  return r;
}

// A node of the instance across epochs: runs each epoch's step loop, and when
// a member fails, the coordinator (rank 0) applies the recovery policy and the
// others follow its decision.
class ControlPlane {
 public:
  ControlPlane(Runtime& rt, Liveness& m, const EngineSetup& setup, RunResult& out)
      : physical_(rt, out.nodes.at(rt.rank()).traffic), m_(m), setup_(setup), out_(out), plan_(setup.plan) {
    for (int p = 0; p < rt.world(); ++p) members_.push_back(p);
  }

  void run() {
    Scheduler* scheduler = physical_.rank() == 0 ? out_.scheduler.get() : nullptr;
    for (;;) {
      m_.set_epoch(epoch_);
      EpochRuntime member(physical_, m_, members_, epoch_);
      std::string cause;
      int lost = -1, reporter = physical_.rank();
      bool failed = false;
      try {
        run_epoch(member, setup_, plan_, link(), out_.nodes[physical_.rank()], scheduler);
        return;
      } catch (const PeerFailure& e) {
        cause = e.what();
        lost = e.peer();
        failed = true;
        if (e.reporter() >= 0) reporter = e.reporter();
      } catch (const Timeout& e) {
        cause = e.what();
        lost = e.peer();  // physical, like PeerFailure's
      } catch (const Reconfigure& e) {
        cause = e.what();
      } catch (const MessageLost& e) {  // rank 0 only
        rerun_step(e.what());
        continue;
      }
      if (scheduler ? !coordinate(*scheduler, lost, reporter, cause) : !follow(lost, cause, failed)) return;
    }
  }

 private:
  double now() const { return physical_.now(); }
  const LinkCard& link() const {
    const Fabric& f = setup_.scenario.fabric;
    return setup_.catalog.link(m_.on_secondary() ? *f.secondary_link : f.link);
  }
  void move_to_secondary_network() {
    physical_.use_secondary_network();
    m_.set_on_secondary(now());  // the heartbeat loop follows at its next beat
  }
  std::string name(int p) const { return p >= 0 ? setup_.scenario.nodes[p].name : std::string(); }
  void note(const std::string& kind, int node, const std::string& detail) {
    out_.events.push_back({now(), kind, name(node), detail});
    if (setup_.on_event) setup_.on_event(out_.events.back());
  }

  // Rank 0: detect, decide, tell the members. False when the instance ends.
  // `reporter` lost `lost`: a dead cable between them, or `lost` is down.
  bool coordinate(Scheduler& scheduler, int lost, int reporter, const std::string& cause) {
    note("detected", lost, cause);
    ++epoch_;
    m_.set_epoch(epoch_);  // heartbeats now carry it: members blocked on a live peer stop waiting
    const bool node_down = lost >= 0 && m_.down(lost, now(), physical_.rank());
    const RecoveryPolicy policy = setup_.scenario.recovery;
    std::string refusal = "policy is fail-stop";
    if (policy == RecoveryPolicy::kReroute) {
      refusal = node_down ? "policy is reroute, and " + name(lost) + " is down (a detour only replaces a cable)"
                          : reroute(lost, reporter);
      if (refusal.empty()) return true;
    }
    if (policy == RecoveryPolicy::kFallback) {
      // On the cables alone, a node cut off by every one of them is as silent as a
      // dead one: only the secondary network tells them apart, so it is tried first.
      if (node_down && (m_.on_secondary() || !m_.refused(lost).empty())) {
        refusal = "policy is fallback, and " + name(lost) + " is down (another network cannot bring it back)";
      } else if (m_.on_secondary()) {
        refusal = "policy is fallback and the secondary network failed too";
      } else {
        // Same members and plan, so every KV cache is still good: only the network changes.
        move_to_secondary_network();  // first, so the decision itself travels on the new network
        tell(members_, decision(lost, plan_.strategy, members_));
        // The whole instance moves, so it names no node: which silent peer was
        // noticed first, when a whole fabric fails at once, is a race.
        note("recovered", -1,
             "moved to the secondary network (" + *setup_.scenario.fabric.secondary_link + ")" +
                 (node_down ? "; " + name(lost) + " was silent on every cable" : ""));
        return true;
      }
    }
    if (policy == RecoveryPolicy::kReplan) {
      // A dead cable between two live nodes: drop its higher-ranked end, whichever
      // end noticed first (on real processes that is a race).
      const int dropped = !node_down && lost > 0 && reporter > lost ? reporter : lost;
      std::vector<int> survivors;
      for (int p : members_)
        if (p != dropped && (p == 0 || !m_.suspected(p, now()))) survivors.push_back(p);
      const Scenario placed = restricted(setup_.scenario, survivors);
      for (Strategy strategy : {plan_.strategy, Strategy::kTensor, Strategy::kTensorUneven, Strategy::kPipeline}) {
        try {
          Plan next = make_plan(placed, setup_.catalog, strategy);
          // Every old member hears it, so one left out (alive but cut off) leaves cleanly.
          tell(members_, decision(dropped, strategy, survivors));
          members_ = survivors;
          plan_ = std::move(next);
          reload_weights();
          out_.tokens_recomputed += scheduler.requeue_in_flight(plan_.kv_capacity_tokens, now(), cause);
          note("recovered", dropped,
               "re-placed on " + std::to_string(survivors.size()) + " node(s) as " + to_string(plan_.strategy));
          out_.placements.emplace_back(now(), plan_);
          return true;
        } catch (const PlanError& e) {
          refusal = e.what();
        }
      }
      refusal = "cannot re-place on the survivors: " + refusal;
    }
    tell(members_, {ControlMessage::kStop, epoch_, lost, 0, m_.on_secondary(), {}, {}});
    scheduler.fail_all(now(), "instance failed: " + cause + " (" + refusal + ")");
    note("instance-failed", lost, refusal);
    return false;
  }

  // Rank 0: nobody failed, but a message of the step was lost. The same
  // members and plan run the step again in a new epoch, which fences off
  // whatever of the old one is still on the wire; the step was not completed,
  // so the scheduler hands it out again.
  void rerun_step(const std::string& cause) {
    ++epoch_;
    m_.set_epoch(epoch_);
    tell(members_, decision(-1, plan_.strategy, members_));
    note("step-rerun", -1, cause + "; the same members run the step again");
  }

  ControlMessage decision(int lost, Strategy strategy, const std::vector<int>& members) const {
    return {ControlMessage::kReconfigure,     epoch_,  lost, static_cast<std::int32_t>(strategy), m_.on_secondary(),
            {members.begin(), members.end()}, detours_};
  }

  // The cable between `a` and `b` is dead but both still run: a third member
  // cabled to both relays between them. Empty on success, else the reason.
  std::string reroute(int a, int b) {
    if (a < 0 || a == b) return "policy is reroute, and no cable is known to have failed";
    if (!physical_.can_relay()) return "policy is reroute, and this transport cannot relay";
    const int lo = std::min(a, b), hi = std::max(a, b);
    for (int relay : members_) {
      if (relay == a || relay == b || m_.down(relay, now(), physical_.rank()) || !cabled(relay, a) || !cabled(relay, b))
        continue;
      const Detour detour{lo, hi, relay};
      if (std::find(tried_relays_.begin(), tried_relays_.end(), detour) != tried_relays_.end())
        continue;  // it failed before
      tried_relays_.push_back(detour);
      std::erase_if(detours_, [&](const Detour& d) { return d.from == lo && d.to == hi; });
      detours_.push_back(detour);
      follow_detours();  // first, so the decision itself takes the detour to a cut-off end
      tell(members_, decision(a, plan_.strategy, members_));
      // Named for its higher-ranked end, whichever end noticed first (on real processes that is a race).
      note("recovered", hi, "rerouted " + name(lo) + "-" + name(hi) + " through " + name(relay) + " (two hops)");
      return "";
    }
    return "policy is reroute, and no third node can relay between " + name(a) + " and " + name(b);
  }

  bool cabled(int a, int b) const {
    const auto& cables = setup_.scenario.fabric.cables;
    return std::any_of(cables.begin(), cables.end(),
                       [&](const Cable& c) { return (c.a == a && c.b == b) || (c.a == b && c.b == a); });
  }

  // Sends to the far end of each detour this node is on take the relay.
  void follow_detours() {
    const int me = physical_.rank();
    for (const Detour& d : detours_) {
      const int other = d.from == me ? d.to : d.to == me ? d.from : -1;
      if (other < 0 || m_.relay(other) == d.relay) continue;
      physical_.route_via(other, d.relay);
      m_.set_relay(other, d.relay, now());
    }
  }

  void tell(const std::vector<int>& to, const ControlMessage& msg) {
    for (int p : to) {
      if (p == physical_.rank()) continue;
      try {
        physical_.send(p, tags::kControl, msg.encode());
      } catch (const PeerFailure&) {
        // It will learn nothing more; the others go on.
      }
    }
  }

  // The new shard's weights come from local SSD at the hardware card's read rate.
  void reload_weights() {
    const auto me = std::find(members_.begin(), members_.end(), physical_.rank()) - members_.begin();
    const Shard& shard = plan_.shards[me];
    physical_.sleep_for(shard.weight_bytes / setup_.catalog.hardware(shard.hardware).ssd_read_bandwidth);
  }

  // Other ranks: report what was seen, then do what rank 0 decides. False
  // when this node leaves the instance. `failed`: `lost` came as a PeerFailure,
  // so this node's runtime no longer carries that peer's messages.
  bool follow(int lost, const std::string& cause, bool failed) {
    const auto report = [&] { tell({0}, {ControlMessage::kAbort, epoch_, lost, 0, m_.on_secondary(), {}, {}}); };
    if (lost >= 0) report();
    const double entered = now(), give_up = entered + kStepProgressTimeoutS;  // a decision lost must not strand us
    bool coordinator_failed = false;
    for (;;) {
      ControlMessage msg;
      try {
        msg = receive_control(physical_, 0, m_.heartbeat_s());
      } catch (const Timeout&) {
        if (now() >= give_up) {
          out_.nodes[physical_.rank()].error = "no decision from the coordinator (" + cause + ")";
          note("left", physical_.rank(),
               "no decision from the coordinator in " + std::to_string(kStepProgressTimeoutS) + " s");
          return false;
        }
        // The coordinator is down (nobody hears it), or silent here for longer
        // than its decision takes to come (over a detour, or another network).
        if (m_.suspected(0, now()) && (m_.down(0, now(), physical_.rank()) || now() - entered > m_.timeout_s())) {
          out_.nodes[physical_.rank()].error = "coordinator " + name(0) + " lost (" + cause + ")";
          note("detected", 0, "no word from the coordinator; " + name(physical_.rank()) + " leaves the instance");
          return false;
        }
        continue;
      } catch (const PeerFailure& e) {  // a closed connection: on real processes, the coordinator died
        // Unless only its RDMA queue pair failed: the verbs transport raises that
        // once and then reaches the peer over its side channel, where a dead
        // coordinator fails again.
        if (!std::exchange(coordinator_failed, true)) continue;
        out_.nodes[physical_.rank()].error = std::string("coordinator unreachable: ") + e.what();
        note("detected", 0, "coordinator unreachable; " + name(physical_.rank()) + " leaves the instance");
        return false;
      }
      if (msg.epoch <= epoch_ || msg.kind == ControlMessage::kAbort) continue;  // fenced: an older decision
      epoch_ = msg.epoch;
      m_.set_epoch(epoch_);  // heartbeats say the decision came (Liveness::stalled), even while weights reload
      if (msg.kind == ControlMessage::kStop) return false;
      const bool moved = msg.secondary && !m_.on_secondary();
      if (moved) move_to_secondary_network();
      detours_ = msg.detours;
      follow_detours();
      const std::vector<int> members(msg.members.begin(), msg.members.end());
      const bool same = members == members_;
      members_ = members;
      if (std::find(members_.begin(), members_.end(), physical_.rank()) == members_.end()) return false;
      // The report crossed a decision taken without it (a step rerun, or another
      // failure's recovery; rank 0 drops a report of an older epoch) that keeps
      // `lost` a member on the same network: tell rank 0 again, in this epoch.
      if (failed && msg.peer != lost && msg.peer != physical_.rank() && !moved &&
          std::find(members_.begin(), members_.end(), lost) != members_.end())
        report();
      if (same) return true;  // same placement: nothing to reload
      plan_ = make_plan(restricted(setup_.scenario, members_), setup_.catalog, static_cast<Strategy>(msg.strategy));
      reload_weights();
      return true;
    }
  }

  MeteredRuntime physical_;
  Liveness& m_;
  const EngineSetup& setup_;
  RunResult& out_;
  Plan plan_;
  std::vector<int> members_;
  std::vector<Detour> detours_;       // in force, as rank 0 decided them
  std::vector<Detour> tried_relays_;  // rank 0: every detour it ever set up
  int epoch_ = 0;
};

}  // namespace

void run_node(Runtime& rt, Liveness& m, const EngineSetup& setup, RunResult& out) {
  if (rt.rank() == 0) {
    out.scheduler = std::make_shared<Scheduler>(setup.requests, setup.scenario.workload, setup.plan.kv_capacity_tokens);
    if (setup.backend)
      out.scheduler->use_token_ids(
          make_prompt_ids(setup.requests, setup.catalog.model(setup.scenario.model).vocab, setup.scenario.seed));
  }
  struct Leave {
    Liveness& m;
    ~Leave() { m.leave(); }
  } leave{m};
  ControlPlane(rt, m, setup, out).run();
}

}  // namespace engine
