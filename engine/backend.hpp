// What a node does with one op of its shard: compute it for real (CpuBackend)
// or spend its modelled time (ModelledBackend).
#pragma once

#include "engine/cost_model.hpp"
#include "engine/runtime.hpp"

namespace engine {

enum class OpKind { kAttention, kFfn, kLmHead };

class Backend {
 public:
  virtual ~Backend() = default;
  // Runs `op` of `layer` for a step of `shape`; returns the seconds it took.
  virtual double run(OpKind op, int layer, const StepShape& shape) = 0;
};

// Charges the roofline time of each op on the runtime's clock: simulated time
// in sim, a real sleep on hardware.
class ModelledBackend : public Backend {
 public:
  // `lm_head_share`: the share of the vocabulary this node's LM head covers.
  ModelledBackend(Runtime& rt, CostModel cost, double lm_head_share)
      : rt_(rt), cost_(std::move(cost)), lm_head_share_(lm_head_share) {}
  double run(OpKind op, int layer, const StepShape& shape) override;
  CostModel& cost() { return cost_; }

 private:
  Runtime& rt_;
  CostModel cost_;
  double lm_head_share_;
};

}  // namespace engine
