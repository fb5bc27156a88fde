#include "engine/node/executor.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>

#include "engine/base/tags.hpp"
#include "engine/node/collectives.hpp"

namespace engine {

namespace {

constexpr int kActivationBytesPerElement = 2;  // fp16/bf16 activations
constexpr double kTokenIdBytes = 4;
constexpr std::uint64_t kLogitBytes = 4;  // f32

// One epoch of one node: its backend, its shard of the op list, and the
// collectives and stage transfers between the members.
class StepLoop {
 public:
  // `rt`: this epoch's EpochRuntime (logical ranks index `plan.shards`).
  StepLoop(Runtime& rt, const EngineSetup& setup, const Plan& plan, const LinkCard& link, NodeResult& result)
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
        step = StepPlan::deserialize(rt_.recv(0, tags::kStep, idle_timeout_s_).bytes);
        if (step.slots.empty()) return;
      }
      const double start = rt_.now();
      const double compute_before = result_.compute_s, comm_before = result_.traffic.comm_s;
      const double wait_before = result_.traffic.wait_s;
      const std::vector<std::uint64_t> bytes_before = result_.traffic.bytes_to;
      const std::vector<std::uint64_t> relayed_before = result_.traffic.relayed;
      const std::uint64_t messages_before = messages_sent();
      const OpTime modelled_before = backend_->modelled();
      const StepShape shape = step.shape();
      backend_->begin_step(step);
      sampled_.clear();
      if (plan_.is_pipeline())
        run_pipeline_step(shape);
      else
        run_tensor_step(shape);
      result_.steps.push_back(StepTrace{start, rt_.now(), result_.compute_s - compute_before,
                                        result_.traffic.comm_s - comm_before, shape.tokens,
                                        since(bytes_before, result_.traffic.bytes_to)});
      result_.steps.back().wait_s = result_.traffic.wait_s - wait_before;
      if (relayed_before != result_.traffic.relayed)
        result_.steps.back().relayed = since(relayed_before, result_.traffic.relayed);
      StepTrace& trace = result_.steps.back();
      for (const Slot& slot : step.slots) trace.prefill_tokens += slot.prefill ? slot.tokens : 0;
      trace.modelled = backend_->modelled();
      trace.modelled -= modelled_before;
      trace.messages = messages_sent() - messages_before;
      trace.message_s = message_latency_s();
      trace.link_bandwidth = link_.bandwidth;
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

  std::uint64_t messages_sent() const {
    const auto& m = result_.traffic.messages_to;
    return std::accumulate(m.begin(), m.end(), std::uint64_t{0});
  }

  // One message's fixed cost: the link's latency and overhead, and the stack's.
  double message_latency_s() const {
    return link_.latency_s + link_.per_message_overhead_s + setup_.profile.per_message_overhead_s;
  }

  // What a counter of this node's traffic grew by since `before` was taken.
  static std::vector<std::uint64_t> since(std::vector<std::uint64_t> before, const std::vector<std::uint64_t>& now) {
    for (std::size_t i = 0; i < before.size(); ++i) before[i] = now[i] - before[i];
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
    if (plan_.strategy == Strategy::kExpert) return 1.0;  // replicated: every node computes it
    if (plan_.is_pipeline()) return shard_.node == static_cast<int>(plan_.shards.size()) - 1 ? 1.0 : 0.0;
    return shard_.vocab_fraction;
  }

  void broadcast_step(const StepPlan& step) {
    const auto bytes = step.serialize();
    for (int r = 1; r < rt_.world(); ++r) rt_.send(r, tags::kStep, Payload::of(bytes));
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
    const auto algo = choose_all_reduce(rt_.world(), static_cast<double>(buf.bytes()), link_.bandwidth, message_latency_s(),
                                        setup_.scenario.fabric.type == FabricType::kFullMesh);
    all_reduce({rt_, tags::kCollective, timeout_s_}, buf, algo);
  }

  // Tensor and expert parallel: every node runs every layer on its share and
  // the partial results are summed after attention and after the FFN.
  void run_tensor_step(const StepShape& shape) {
    const bool expert = plan_.strategy == Strategy::kExpert;
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
      all_gather({rt_, tags::kCollective, timeout_s_}, ids);
      return;
    }
    std::vector<float> pairs(2 * static_cast<std::size_t>(shape.logits) * n);  // (logit, id bits) per rank and slot
    const auto mine = backend_->best_tokens();
    for (std::size_t i = 0; i < mine.size(); ++i) {
      pairs[2 * (rt_.rank() * mine.size() + i)] = mine[i].logit;
      pairs[2 * (rt_.rank() * mine.size() + i) + 1] = std::bit_cast<float>(mine[i].id);
    }
    auto buf = CollectiveBuffer::real(pairs);
    all_gather({rt_, tags::kCollective, timeout_s_}, buf);
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

  // What the last stage of llama.cpp's RPC pipeline returns to the client: the logits (vocab x 4-byte floats a
  // sampled position), since the client samples. A backend that computes returns the ids it sampled instead.
  Payload logits_for_client(const StepShape& shape) const {
    if (backend_->computes()) return token_ids(shape);
    return Payload::sized(static_cast<std::uint64_t>(shape.logits) * model_.vocab * kLogitBytes);
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
          rt_.send(s, tags::kCommand, Payload::sized(64));
          rt_.recv(s, tags::kCommand, timeout_s_);
          rt_.send(s, tags::kActivation, activations(shape));
          const Payload back = rt_.recv(s, tags::kActivation, timeout_s_);
          s < n - 1 ? take_activations(back) : take_token_ids(back);
        }
      } else {
        rt_.recv(0, tags::kCommand, timeout_s_);
        rt_.send(0, tags::kCommand, Payload::sized(64));
        take_activations(rt_.recv(0, tags::kActivation, timeout_s_));
        run_layers(shape);
        if (r == n - 1) compute(OpKind::kLmHead, 0, shape);
        rt_.send(0, tags::kActivation, r == n - 1 ? logits_for_client(shape) : activations(shape));
      }
      return;
    }
    if (r > 0) take_activations(rt_.recv(r - 1, tags::kActivation, timeout_s_));
    run_layers(shape);
    if (r < n - 1) {
      rt_.send(r + 1, tags::kActivation, activations(shape));
    } else if (n == 1) {
      predict(shape);
    } else {
      compute(OpKind::kLmHead, 0, shape);
      rt_.send(0, tags::kTokens, token_ids(shape));
    }
    if (r == 0 && n > 1) take_token_ids(rt_.recv(n - 1, tags::kTokens, timeout_s_));
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

}  // namespace

void run_epoch(Runtime& rt, const EngineSetup& setup, const Plan& plan, const LinkCard& link, NodeResult& result,
               Scheduler* scheduler) {
  StepLoop(rt, setup, plan, link, result).run(scheduler);
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
