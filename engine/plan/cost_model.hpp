// Op times for one node's shard, kernel by kernel: each kernel a layer
// launches (layer_kernels.hpp) costs its bytes against the card's memory
// bandwidth or its FLOPs against the card's peak, whichever is longer, each
// scaled by the stack's efficiency, plus the stack's dispatch cost per kernel.
#pragma once

#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/cards/stack_profile.hpp"
#include "engine/plan/layer_kernels.hpp"
#include "engine/plan/planner.hpp"

namespace engine {

// An op's time by the roofline term that sets it: each kernel costs the longer
// of its bytes and its FLOPs, counted here as memory or arithmetic, plus its
// dispatch. floor_s: the same kernels at the card's full bandwidth and peak,
// with no dispatch (in decode, bytes read / memory bandwidth): the physical floor.
struct OpTime {
  double seconds = 0;  // kernel by kernel: the terms below add up to it, but for rounding
  double memory_s = 0, arithmetic_s = 0, dispatch_s = 0;
  double floor_s = 0;
  OpTime& operator+=(const OpTime& o);
  OpTime& operator-=(const OpTime& o);
};

class CostModel {
 public:
  CostModel(const ModelCard& m, const Quantization& q, const HardwareCard& hw, const StackProfile& p,
            const Shard& shard);

  OpTime attention(int layer, const StepShape& s) const;
  // Dense FFN, or the experts this node holds (expected distinct experts hit by the batch).
  OpTime ffn(int layer, const StepShape& s) const;
  // The final norm and the LM head over `share` of the vocabulary.
  OpTime lm_head(const StepShape& s, double share) const;

  // One kernel: the longer of its bytes and its FLOPs, plus its dispatch (and, for
  // routed-expert matmuls, a cost per expert read).
  OpTime kernel(const Kernel& k) const;

 private:
  OpTime kernels(const std::vector<Kernel>& kernels) const;

  const ModelCard& model_;
  double bytes_per_param_;         // every weight but the routed experts'
  double expert_bytes_per_param_;  // routed experts (they differ in mixed quants)
  const HardwareCard& hw_;
  const StackProfile& profile_;
  const Shard& shard_;
};

}  // namespace engine
