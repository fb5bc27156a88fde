// What a node does with one op of its shard: compute it for real (CpuBackend)
// or spend its modelled time (ModelledBackend).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/base/runtime.hpp"
#include "engine/node/scheduler.hpp"
#include "engine/plan/cost_model.hpp"

namespace engine {

enum class OpKind { kAttention, kFfn, kLmHead };

// The best next token a shard's LM head found for one emitting slot.
struct TokenChoice {
  float logit = 0;
  int id = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Runs `op` of `layer` for a step of `shape`; returns the seconds it took.
  // `partial`: the executor sums the op's output over the ranks afterwards, so
  // only rank 0's output carries the residual.
  virtual double run(OpKind op, int layer, const StepShape& shape, bool partial) = 0;

  // A backend that computes moves real data; the rest are for it only.
  virtual bool computes() const { return false; }
  // Starts a step: the hidden state of its tokens, embedded where this shard
  // holds the token's embedding row (zero elsewhere).
  virtual void begin_step(const StepPlan&) {}
  // The step's hidden state, [tokens x hidden], row by row in slot order.
  virtual std::span<float> hidden() { return {}; }
  // After kLmHead: per emitting slot, the best token of this shard's vocabulary.
  virtual std::vector<TokenChoice> best_tokens() const { return {}; }
  // The cost model's terms of every op run so far (the report's bottleneck
  // split); zero for a backend that times its ops without the cost model.
  virtual OpTime modelled() const { return {}; }
};

// Charges the roofline time of each op on the runtime's clock: simulated time
// in sim, a real sleep on hardware.
class ModelledBackend : public Backend {
 public:
  // `lm_head_share`: the share of the vocabulary this node's LM head covers.
  ModelledBackend(Runtime& rt, CostModel cost, double lm_head_share)
      : rt_(rt), model_(std::move(cost)), lm_head_share_(lm_head_share) {}
  double run(OpKind op, int layer, const StepShape& shape, bool partial) override;
  OpTime modelled() const override { return spent_; }

 private:
  // Every layer of a step has the step's shape: an op's cost (its kernel list
  // costed one by one) is worked out once per layer and shape, not per call.
  const OpTime& cost(OpKind op, int layer, const StepShape& shape);

  Runtime& rt_;
  CostModel model_;
  double lm_head_share_;
  StepShape shape_;
  std::vector<OpTime> cost_;  // by layer * 3 + op, for shape_; seconds -1: not worked out yet
  OpTime spent_;
};

// Builds the backend of shard `rt.rank()` of `plan`; `modelled` is the one a
// node uses without a factory (its roofline time, for a backend to charge).
using BackendFactory =
    std::function<std::unique_ptr<Backend>(Runtime& rt, const Plan& plan, std::unique_ptr<Backend> modelled)>;

}  // namespace engine
