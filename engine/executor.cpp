#include "engine/executor.hpp"

#include <algorithm>

#include "engine/backend.hpp"
#include "engine/collectives.hpp"
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

class NodeLoop {
 public:
  NodeLoop(Runtime& raw, const EngineSetup& setup, NodeResult& result)
      : setup_(setup),
        model_(setup.catalog.model(setup.scenario.model)),
        shard_(setup.plan.shards[raw.rank()]),
        result_(result),
        rt_(raw, result.traffic),
        backend_(rt_, CostModel(model_, model_.quant(setup.scenario.quant), setup.catalog.hardware(shard_.hardware),
                                setup.profile, shard_),
                 lm_head_share()),
        link_(setup.catalog.link(setup.scenario.fabric.link)),
        timeout_s_(setup.scenario.deadline_s) {}

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
        step = StepPlan::deserialize(rt_.recv(0, kStepTag, timeout_s_).bytes);
        if (step.slots.empty()) return;
      }
      const double start = rt_.now();
      const double compute_before = result_.compute_s, comm_before = result_.traffic.comm_s;
      const std::vector<std::uint64_t> bytes_before = result_.traffic.bytes_to;
      const StepShape shape = step.shape();
      if (setup_.plan.is_pipeline())
      const double wait_before = result_.traffic.wait_s;
        run_pipeline_step(shape);
      else
        run_tensor_step(shape);
      result_.steps.push_back(StepTrace{start, rt_.now(), result_.compute_s - compute_before,
                                        result_.traffic.comm_s - comm_before, shape.tokens,
                                        sent_since(bytes_before)});
      if (scheduler) {
        scheduler->complete(step, start, rt_.now());
        report_progress(*scheduler);
      result_.steps.back().wait_s = result_.traffic.wait_s - wait_before;
      }
    }
  }

 private:
  void report_progress(const Scheduler& scheduler) {
    if (!setup_.progress) return;
    const auto& records = scheduler.records();
    const int done = static_cast<int>(std::count_if(records.begin(), records.end(), [](const auto& r) { return r.done(); }));
    if (done != reported_done_) setup_.progress(reported_done_ = done, static_cast<int>(records.size()), rt_.now());
  }

  // What this node sent, by destination, since `before` was taken.
  std::vector<std::uint64_t> sent_since(std::vector<std::uint64_t> before) const {
    for (std::size_t i = 0; i < before.size(); ++i) before[i] = result_.traffic.bytes_to[i] - before[i];
    return before;
  }

  double lm_head_share() const {
    if (setup_.plan.strategy == "expert") return 1.0;  // replicated: every node computes it
    if (setup_.plan.is_pipeline()) return shard_.node == static_cast<int>(setup_.plan.shards.size()) - 1 ? 1.0 : 0.0;
    return shard_.vocab_fraction;
  }

  void broadcast_step(const StepPlan& step) {
    const auto bytes = step.serialize();
    for (int r = 1; r < rt_.world(); ++r) rt_.send(r, kStepTag, Payload::of(bytes));
  }

  void compute(OpKind op, int layer, const StepShape& shape) { result_.compute_s += backend_.run(op, layer, shape); }

  void all_reduce_activations(const StepShape& shape) {
    if (rt_.world() == 1) return;
    auto buf = CollectiveBuffer::sized(static_cast<std::uint64_t>(shape.tokens) * model_.hidden, kActivationBytesPerElement);
    const double latency = link_.latency_s + link_.per_message_overhead_s + setup_.profile.per_message_overhead_s;
    const auto algo = choose_all_reduce(rt_.world(), static_cast<double>(buf.bytes()), link_.bandwidth, latency,
                                        setup_.scenario.fabric.type == "full-mesh");
    all_reduce({rt_, kCollectiveTag, timeout_s_}, buf, algo);
  }

  // Tensor and expert parallel: every node runs every layer on its share and
  // the partial results are summed after attention and after the FFN.
  void run_tensor_step(const StepShape& shape) {
    const bool expert = setup_.plan.strategy == "expert";
    for (int layer = 0; layer < model_.layers; ++layer) {
      compute(OpKind::kAttention, layer, shape);
      if (!expert) all_reduce_activations(shape);  // expert parallel replicates attention
      compute(OpKind::kFfn, layer, shape);
      if (!expert || model_.is_moe_layer(layer)) all_reduce_activations(shape);  // combine expert outputs
    }
    compute(OpKind::kLmHead, 0, shape);
    if (rt_.world() > 1 && !expert) {
      // Each node's best token over its vocabulary shard, gathered everywhere.
      auto ids = CollectiveBuffer::sized(static_cast<std::uint64_t>(shape.logits) * rt_.world(), 2 * kTokenIdBytes);
      all_gather({rt_, kCollectiveTag, timeout_s_}, ids);
    }
  }

  void run_layers(const StepShape& shape) {
    for (int layer = shard_.first_layer; layer < shard_.end_layer; ++layer) {
      compute(OpKind::kAttention, layer, shape);
      compute(OpKind::kFfn, layer, shape);
    }
  }

  Payload activations(const StepShape& shape) const {
    return Payload::sized(static_cast<std::uint64_t>(shape.tokens) * model_.hidden * kActivationBytesPerElement);
  }

  // Pipeline: stages run one after another, each sending its activations on.
  // With stage_round_trip (llama.cpp RPC) rank 0 is the client: every stage
  // boundary goes through it, after a synchronous command round trip.
  void run_pipeline_step(const StepShape& shape) {
    const int n = rt_.world(), r = rt_.rank();
    const Payload token_ids = Payload::sized(static_cast<std::uint64_t>(shape.logits * kTokenIdBytes));
    if (setup_.profile.stage_round_trip) {
      if (r == 0) {
        run_layers(shape);
        if (n == 1) compute(OpKind::kLmHead, 0, shape);
        for (int s = 1; s < n; ++s) {
          rt_.send(s, kCommandTag, Payload::sized(64));
          rt_.recv(s, kCommandTag, timeout_s_);
          rt_.send(s, kActivationTag, activations(shape));
          rt_.recv(s, kActivationTag, timeout_s_);
        }
      } else {
        rt_.recv(0, kCommandTag, timeout_s_);
        rt_.send(0, kCommandTag, Payload::sized(64));
        rt_.recv(0, kActivationTag, timeout_s_);
        run_layers(shape);
        if (r == n - 1) compute(OpKind::kLmHead, 0, shape);
        rt_.send(0, kActivationTag, r == n - 1 ? token_ids : activations(shape));
      }
      return;
    }
    if (r > 0) rt_.recv(r - 1, kActivationTag, timeout_s_);
    run_layers(shape);
    if (r < n - 1) {
      rt_.send(r + 1, kActivationTag, activations(shape));
    } else {
      compute(OpKind::kLmHead, 0, shape);
      if (n > 1) rt_.send(0, kTokensTag, token_ids);
    }
    if (r == 0 && n > 1) rt_.recv(n - 1, kTokensTag, timeout_s_);
  }

  const EngineSetup& setup_;
  const ModelCard& model_;
  const Shard& shard_;
  NodeResult& result_;
  MeteredRuntime rt_;
  ModelledBackend backend_;
  const LinkCard& link_;
  double timeout_s_;
  int reported_done_ = 0;
};

}  // namespace

void run_node(Runtime& rt, const EngineSetup& setup, RunResult& out) {
  NodeResult& mine = out.nodes.at(rt.rank());
  NodeLoop loop(rt, setup, mine);
  if (rt.rank() != 0) {
    loop.run(nullptr);
    return;
  }
  Scheduler scheduler(setup.requests, setup.scenario.workload, setup.plan.kv_capacity_tokens);
  try {
    loop.run(&scheduler);
  } catch (const std::exception& e) {
    // The instance is lost: every request still in flight ends with the cause.
    scheduler.fail_all(rt.now(), std::string("instance failed: ") + e.what());
    mine.error = e.what();
  }
  out.requests = scheduler.records();
  out.steps = scheduler.steps();
  out.end_s = rt.now();
}

}  // namespace engine
