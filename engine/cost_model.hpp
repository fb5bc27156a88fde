// Roofline op times for one node's shard: bytes against the card's memory
// bandwidth, FLOPs against its peak, each scaled by the stack's profile,
// plus the profile's fixed overheads.
#pragma once

#include "engine/catalog.hpp"
#include "engine/planner.hpp"
#include "engine/stack_card.hpp"

namespace engine {

// The work of one step on one node, whatever mix of decode and prefill it holds.
struct StepShape {
  int tokens = 0;             // new tokens processed
  int sequences = 0;          // sequences in the batch
  double attended = 0;        // sum over new tokens of the context each attends to
  double kv_read_tokens = 0;  // sum over sequences of cached tokens read once
  int logits = 0;             // tokens whose next-token logits are needed
};

class CostModel {
 public:
  CostModel(const ModelCard& m, const Quantization& q, const HardwareCard& hw, const StackCard& p, const Shard& shard);

  // Includes the profile's per-layer overhead (one charge per layer).
  double attention_s(int layer, const StepShape& s) const;
  // Dense FFN, or the experts this node holds (expected distinct experts hit by the batch).
  double ffn_s(int layer, const StepShape& s) const;
  // The LM head over `share` of the vocabulary.
  double lm_head_s(const StepShape& s, double share) const;

 private:
  // `expert_flops` run at the profile's expert_compute_efficiency.
  double roofline_s(double bytes, double flops, double expert_flops = 0) const;

  const ModelCard& model_;
  double bytes_per_param_;
  const HardwareCard& hw_;
  const StackCard& profile_;
  const Shard& shard_;
};

}  // namespace engine
