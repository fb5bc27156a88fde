#include "engine/executor.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "engine/collectives.hpp"
#include "engine/epoch_runtime.hpp"
#include "engine/error.hpp"

namespace engine {

namespace {

constexpr int kStepTag = 1;        // rank 0 -> all: the next step (empty: stop)
constexpr int kActivationTag = 2;  // pipeline stage boundaries
constexpr int kTokensTag = 3;      // sampled token ids back to rank 0
constexpr int kCommandTag = 4;     // RPC-style command round trips
constexpr int kCollectiveTag = 10;
constexpr int kActivationBytesPerElement = 2;  // fp16/bf16 activations
constexpr double kTokenIdBytes = 4;
// Within a step, a member that heartbeats but sends nothing for this long has
// lost our messages (a flapping cable drops them silently, as UC RDMA does).
constexpr double kStepProgressTimeoutS = 30;

class NodeLoop {
 public:
  // `rt`: this epoch's EpochRuntime (logical ranks index `plan.shards`).
  NodeLoop(Runtime& rt, const EngineSetup& setup, const Plan& plan, const LinkCard& link, NodeResult& result)
      : setup_(setup),
        plan_(plan),
        model_(setup.catalog.model(setup.scenario.model)),
        shard_(plan.shards[rt.rank()]),
        result_(result),
        rt_(rt),
        backend_(make_backend()),
        link_(link),
        timeout_s_(std::min(kStepProgressTimeoutS, setup.scenario.deadline_s)),
        idle_timeout_s_(setup.scenario.deadline_s) {}

  // Rank 0: schedule, broadcast, run; everyone else: receive and run.
  void run(Scheduler* scheduler) {
    for (;;) {
      StepPlan step;
      if (scheduler) {
        auto next = scheduler->next(rt_.now());
        if (!next) {
          const double arrival = scheduler->next_arrival();
          if (scheduler->finished() || arrival < 0) {
            broadcast_step(StepPlan{});
            return;
          }
          rt_.sleep_for(arrival - rt_.now());
          continue;
        }
        step = *next;
        broadcast_step(step);
      } else {
        step = StepPlan::deserialize(rt_.recv(0, kStepTag, idle_timeout_s_).bytes);
        if (step.slots.empty()) return;
      }
      const double start = rt_.now();
      const double compute_before = result_.compute_s, comm_before = result_.traffic.comm_s;
      const double wait_before = result_.traffic.wait_s;
      const std::vector<std::uint64_t> bytes_before = result_.traffic.bytes_to;
      const StepShape shape = step.shape();
      backend_->begin_step(step);
      sampled_.clear();
      if (plan_.is_pipeline())
        run_pipeline_step(shape);
      else
        run_tensor_step(shape);
      result_.steps.push_back(StepTrace{start, rt_.now(), result_.compute_s - compute_before,
                                        result_.traffic.comm_s - comm_before, shape.tokens, sent_since(bytes_before)});
      result_.steps.back().wait_s = result_.traffic.wait_s - wait_before;
      if (scheduler) {
        if (backend_->computes()) scheduler->record_tokens(step, sampled_);
        scheduler->complete(step, start, rt_.now());
        report_progress(*scheduler);
      }
    }
  }

 private:
  void report_progress(const Scheduler& scheduler) {
    if (!setup_.progress) return;
    const auto& records = scheduler.records();
    const int done =
        static_cast<int>(std::count_if(records.begin(), records.end(), [](const auto& r) { return r.done(); }));
    if (done != reported_done_) setup_.progress(reported_done_ = done, static_cast<int>(records.size()), rt_.now());
  }

  // What this node sent, by destination, since `before` was taken.
  std::vector<std::uint64_t> sent_since(std::vector<std::uint64_t> before) const {
    for (std::size_t i = 0; i < before.size(); ++i) before[i] = result_.traffic.bytes_to[i] - before[i];
    return before;
  }

  std::unique_ptr<Backend> make_backend() {
    auto modelled =
        std::make_unique<ModelledBackend>(rt_,
                                          CostModel(model_, model_.quant(setup_.scenario.quant),
                                                    setup_.catalog.hardware(shard_.hardware), setup_.profile, shard_),
                                          lm_head_share());
    if (!setup_.backend) return modelled;
    return setup_.backend(rt_, plan_, std::move(modelled));
  }

  double lm_head_share() const {
    if (plan_.strategy == "expert") return 1.0;  // replicated: every node computes it
    if (plan_.is_pipeline()) return shard_.node == static_cast<int>(plan_.shards.size()) - 1 ? 1.0 : 0.0;
    return shard_.vocab_fraction;
  }

  void broadcast_step(const StepPlan& step) {
    const auto bytes = step.serialize();
    for (int r = 1; r < rt_.world(); ++r) rt_.send(r, kStepTag, Payload::of(bytes));
  }

  // `partial`: the op's output is summed over the ranks next.
  void compute(OpKind op, int layer, const StepShape& shape, bool partial = false) {
    result_.compute_s += backend_->run(op, layer, shape, partial);
  }

  void all_reduce_activations(const StepShape& shape) {
    if (rt_.world() == 1) return;
    auto buf = backend_->computes() ? CollectiveBuffer::real(backend_->hidden())
                                    : CollectiveBuffer::sized(static_cast<std::uint64_t>(shape.tokens) * model_.hidden,
                                                              kActivationBytesPerElement);
    const double latency = link_.latency_s + link_.per_message_overhead_s + setup_.profile.per_message_overhead_s;
    const auto algo = choose_all_reduce(rt_.world(), static_cast<double>(buf.bytes()), link_.bandwidth, latency,
                                        setup_.scenario.fabric.type == "full-mesh");
    all_reduce({rt_, kCollectiveTag, timeout_s_}, buf, algo);
  }

  // Tensor and expert parallel: every node runs every layer on its share and
  // the partial results are summed after attention and after the FFN.
  void run_tensor_step(const StepShape& shape) {
    const bool expert = plan_.strategy == "expert";
    // Each rank embedded the tokens of its vocabulary shard; the sum is every token.
    if (!expert && backend_->computes()) all_reduce_activations(shape);
    for (int layer = 0; layer < model_.layers; ++layer) {
      compute(OpKind::kAttention, layer, shape, !expert);
      if (!expert) all_reduce_activations(shape);  // expert parallel replicates attention
      const bool split_ffn = !expert || model_.is_moe_layer(layer);
      compute(OpKind::kFfn, layer, shape, split_ffn);
      if (split_ffn) all_reduce_activations(shape);  // combine expert outputs
    }
    if (rt_.world() > 1 && !expert) {
      compute(OpKind::kLmHead, 0, shape);
      gather_best_tokens(shape);
    } else {
      predict(shape);
    }
  }

  // Each node's best token over its vocabulary shard, gathered everywhere: the
  // highest logit wins, the lower rank (so the lower id) on a tie.
  void gather_best_tokens(const StepShape& shape) {
    const int n = rt_.world();
    if (!backend_->computes()) {
      auto ids = CollectiveBuffer::sized(static_cast<std::uint64_t>(shape.logits) * n, 2 * kTokenIdBytes);
      all_gather({rt_, kCollectiveTag, timeout_s_}, ids);
      return;
    }
    std::vector<float> pairs(2 * static_cast<std::size_t>(shape.logits) * n);  // (logit, id bits) per rank and slot
    const auto mine = backend_->best_tokens();
    for (std::size_t i = 0; i < mine.size(); ++i) {
      pairs[2 * (rt_.rank() * mine.size() + i)] = mine[i].logit;
      pairs[2 * (rt_.rank() * mine.size() + i) + 1] = std::bit_cast<float>(mine[i].id);
    }
    auto buf = CollectiveBuffer::real(pairs);
    all_gather({rt_, kCollectiveTag, timeout_s_}, buf);
    std::vector<TokenChoice> best(mine.size());
    for (std::size_t i = 0; i < mine.size(); ++i)
      for (int r = 0; r < n; ++r) {
        const std::size_t at = 2 * (r * mine.size() + i);
        if (r == 0 || pairs[at] > best[i].logit) best[i] = {pairs[at], std::bit_cast<int>(pairs[at + 1])};
      }
    take_best_tokens(best);
  }

  void take_best_tokens(const std::vector<TokenChoice>& best) {
    for (const TokenChoice& c : best) sampled_.push_back(c.id);
  }

  void run_layers(const StepShape& shape) {
    for (int layer = shard_.first_layer; layer < shard_.end_layer; ++layer) {
      compute(OpKind::kAttention, layer, shape);
      compute(OpKind::kFfn, layer, shape);
    }
  }

  Payload activations(const StepShape& shape) const {
    if (backend_->computes()) return Payload::of(std::as_bytes(backend_->hidden()));
    return Payload::sized(static_cast<std::uint64_t>(shape.tokens) * model_.hidden * kActivationBytesPerElement);
  }

  void take_activations(const Payload& p) {
    if (!backend_->computes()) return;
    const std::span<float> hidden = backend_->hidden();
    if (p.bytes.size() != hidden.size_bytes()) throw std::runtime_error("activations of unexpected size");
    std::memcpy(hidden.data(), p.bytes.data(), p.bytes.size());
  }

  // The last stage's sampled ids, for rank 0.
  Payload token_ids(const StepShape& shape) const {
    if (!backend_->computes()) return Payload::sized(static_cast<std::uint64_t>(shape.logits * kTokenIdBytes));
    std::vector<std::int32_t> ids;
    for (const TokenChoice& c : backend_->best_tokens()) ids.push_back(c.id);
    return Payload::of(std::as_bytes(std::span<const std::int32_t>(ids)));
  }

  void take_token_ids(const Payload& p) {
    if (!backend_->computes()) return;
    std::vector<std::int32_t> ids(p.bytes.size() / sizeof(std::int32_t));
    std::memcpy(ids.data(), p.bytes.data(), ids.size() * sizeof(std::int32_t));
    sampled_.assign(ids.begin(), ids.end());
  }

  // Pipeline: stages run one after another, each sending its activations on.
  // With stage_round_trip (llama.cpp RPC) rank 0 is the client: every stage
  // boundary goes through it, after a synchronous command round trip.
  void run_pipeline_step(const StepShape& shape) {
    const int n = rt_.world(), r = rt_.rank();
    if (setup_.profile.stage_round_trip) {
      if (r == 0) {
        run_layers(shape);
        if (n == 1) predict(shape);
        for (int s = 1; s < n; ++s) {
          rt_.send(s, kCommandTag, Payload::sized(64));
          rt_.recv(s, kCommandTag, timeout_s_);
          rt_.send(s, kActivationTag, activations(shape));
          const Payload back = rt_.recv(s, kActivationTag, timeout_s_);
          s < n - 1 ? take_activations(back) : take_token_ids(back);
        }
      } else {
        rt_.recv(0, kCommandTag, timeout_s_);
        rt_.send(0, kCommandTag, Payload::sized(64));
        take_activations(rt_.recv(0, kActivationTag, timeout_s_));
        run_layers(shape);
        if (r == n - 1) compute(OpKind::kLmHead, 0, shape);
        rt_.send(0, kActivationTag, r == n - 1 ? token_ids(shape) : activations(shape));
      }
      return;
    }
    if (r > 0) take_activations(rt_.recv(r - 1, kActivationTag, timeout_s_));
    run_layers(shape);
    if (r < n - 1) {
      rt_.send(r + 1, kActivationTag, activations(shape));
    } else if (n == 1) {
      predict(shape);
    } else {
      compute(OpKind::kLmHead, 0, shape);
      rt_.send(0, kTokensTag, token_ids(shape));
    }
    if (r == 0 && n > 1) take_token_ids(rt_.recv(n - 1, kTokensTag, timeout_s_));
  }

  // The LM head on rank 0 itself: its best tokens are the step's.
  void predict(const StepShape& shape) {
    compute(OpKind::kLmHead, 0, shape);
    take_best_tokens(backend_->best_tokens());
  }

  const EngineSetup& setup_;
  const Plan& plan_;
  const ModelCard& model_;
  const Shard& shard_;
  NodeResult& result_;
  Runtime& rt_;
  std::unique_ptr<Backend> backend_;
  const LinkCard& link_;
  double timeout_s_;       // waits inside a step
  double idle_timeout_s_;  // waiting for the next step: arrivals may be far apart
  int reported_done_ = 0;
  std::vector<int> sampled_;  // rank 0: the ids the step sampled, one per emitting slot
};

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

int strategy_index(const std::string& strategy) {
  for (int i = 0; i < static_cast<int>(std::size(kStrategies)); ++i)
    if (strategy == kStrategies[i]) return i;
  return 0;
}

// A node of the instance across epochs: runs the node loop, and when a
// member fails, the coordinator (rank 0) applies the recovery policy and the
// others follow its decision.
class Node {
 public:
  Node(Runtime& rt, Liveness& m, const EngineSetup& setup, RunResult& out)
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
      try {
        NodeLoop(member, setup_, plan_, link(), out_.nodes[physical_.rank()]).run(scheduler);
        return;
      } catch (const PeerFailure& e) {
        cause = e.what();
        lost = e.peer();
        if (e.reporter() >= 0) reporter = e.reporter();
      } catch (const Timeout& e) {
        cause = e.what();
        lost = e.peer();  // physical, like PeerFailure's
      } catch (const Reconfigure& e) {
        cause = e.what();
      }
      if (scheduler ? !coordinate(*scheduler, lost, reporter, cause) : !follow(lost, cause)) return;
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
    m_.set_on_secondary();  // the heartbeat loop follows at its next beat
  }
  std::string name(int p) const { return p >= 0 ? setup_.scenario.nodes[p].name : std::string(); }
  void note(const std::string& kind, int node, const std::string& detail) {
    out_.events.push_back({now(), kind, name(node), detail});
  }

  // Rank 0: detect, decide, tell the members. False when the instance ends.
  // `reporter` lost `lost`: a dead cable between them, or `lost` is down.
  bool coordinate(Scheduler& scheduler, int lost, int reporter, const std::string& cause) {
    note("detected", lost, cause);
    ++epoch_;
    m_.set_epoch(epoch_);  // heartbeats now carry it: members blocked on a live peer stop waiting
    const bool node_down = lost >= 0 && m_.down(lost, now(), physical_.rank());
    const std::string& policy = setup_.scenario.recovery;
    std::string refusal = "policy is fail-stop";
    if (policy == "reroute") {
      refusal = node_down ? "policy is reroute, and " + name(lost) + " is down (a detour only replaces a cable)"
                          : reroute(lost, reporter);
      if (refusal.empty()) return true;
    }
    if (policy == "fallback") {
      if (node_down) {
        refusal = "policy is fallback, and " + name(lost) + " is down (another network cannot bring it back)";
      } else if (m_.on_secondary()) {
        refusal = "policy is fallback and the secondary network failed too";
      } else {
        // Same members and plan, so every KV cache is still good: only the network changes.
        move_to_secondary_network();  // first, so the decision itself travels on the new network
        tell(members_, decision(lost, plan_.strategy, members_));
        note("recovered", lost, "moved to the secondary network (" + *setup_.scenario.fabric.secondary_link + ")");
        return true;
      }
    }
    if (policy == "replan") {
      std::vector<int> survivors;
      for (int p : members_)
        if (p != lost && (p == 0 || !m_.suspected(p, now()))) survivors.push_back(p);
      const Scenario placed = restricted(setup_.scenario, survivors);
      for (const char* strategy : {plan_.strategy.c_str(), "tensor", "tensor-uneven", "pipeline"}) {
        try {
          Plan next = make_plan(placed, setup_.catalog, strategy);
          // Every old member hears it, so one left out (alive but cut off) leaves cleanly.
          tell(members_, decision(lost, strategy, survivors));
          members_ = survivors;
          plan_ = std::move(next);
          reload_weights();
          out_.tokens_recomputed += scheduler.requeue_in_flight(plan_.kv_capacity_tokens, now(), cause);
          note("recovered", lost, "re-placed on " + std::to_string(survivors.size()) + " node(s) as " + plan_.strategy);
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

  ControlMessage decision(int lost, const std::string& strategy, const std::vector<int>& members) const {
    return {ControlMessage::kReconfigure,     epoch_,  lost, strategy_index(strategy), m_.on_secondary(),
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
      tell(members_, decision(a, plan_.strategy, members_));
      follow_detours();
      note("recovered", a, "rerouted " + name(lo) + "-" + name(hi) + " through " + name(relay) + " (two hops)");
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
        physical_.send(p, kControlTag, msg.encode());
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
  // when this node leaves the instance.
  bool follow(int lost, const std::string& cause) {
    if (lost >= 0) tell({0}, {ControlMessage::kAbort, epoch_, lost, 0, m_.on_secondary(), {}, {}});
    const double give_up = now() + kStepProgressTimeoutS;  // a decision lost on a bad cable must not strand us
    for (;;) {
      ControlMessage msg;
      try {
        msg = ControlMessage::decode(physical_.recv(0, kControlTag, m_.heartbeat_s()));
      } catch (const Timeout&) {
        if (now() >= give_up) {
          out_.nodes[physical_.rank()].error = "no decision from the coordinator (" + cause + ")";
          note("left", physical_.rank(),
               "no decision from the coordinator in " + std::to_string(kStepProgressTimeoutS) + " s");
          return false;
        }
        if (m_.suspected(0, now())) {
          out_.nodes[physical_.rank()].error = "coordinator " + name(0) + " lost (" + cause + ")";
          note("detected", 0, "no word from the coordinator; " + name(physical_.rank()) + " leaves the instance");
          return false;
        }
        continue;
      } catch (const PeerFailure& e) {
        out_.nodes[physical_.rank()].error = std::string("coordinator unreachable: ") + e.what();
        return false;
      }
      if (msg.epoch <= epoch_ || msg.kind == ControlMessage::kAbort) continue;  // fenced: an older decision
      epoch_ = msg.epoch;
      if (msg.kind == ControlMessage::kStop) return false;
      if (msg.secondary && !m_.on_secondary()) move_to_secondary_network();
      detours_ = msg.detours;
      follow_detours();
      const std::vector<int> members(msg.members.begin(), msg.members.end());
      if (members == members_) return true;  // same placement: nothing to reload
      members_ = members;
      if (std::find(members_.begin(), members_.end(), physical_.rank()) == members_.end()) return false;
      plan_ = make_plan(restricted(setup_.scenario, members_), setup_.catalog, kStrategies[msg.strategy]);
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
  Node(rt, m, setup, out).run();
}

void finish_run(RunResult& out, double end_s) {
  out.end_s = end_s;
  if (!out.scheduler) return;
  // A request still open here was in flight when the coordinator went down.
  out.scheduler->fail_all(end_s, "coordinator lost before the request ended");
  out.requests = out.scheduler->records();
  out.steps = out.scheduler->steps();
}

}  // namespace engine
