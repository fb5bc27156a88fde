#include "engine/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "engine/model_math.hpp"
#include "engine/portable_math.hpp"

namespace engine {

CostModel::CostModel(const ModelCard& m, const Quantization& q, const HardwareCard& hw, const StackCard& p,
                     const Shard& shard)
    : model_(m), bytes_per_param_(q.bits_per_weight / 8), hw_(hw), profile_(p), shard_(shard) {}

double CostModel::roofline_s(double bytes, double flops, double expert_flops) const {
  const double memory_s = bytes / (hw_.memory_bandwidth * profile_.memory_bandwidth_efficiency);
  const double compute_s = flops / (hw_.peak_flops * profile_.compute_efficiency) +
                           expert_flops / (hw_.peak_flops * profile_.expert_compute_efficiency);
  return std::max(memory_s, compute_s) + profile_.per_op_overhead_s;
}

double CostModel::attention_s(int layer, const StepShape& s) const {
  const LayerParts p = layer_parts(model_, layer);
  const double params = shard_.heads * p.per_query_head + shard_.kv_heads * p.per_kv_head + p.replicated;
  const LayerCost c = layer_cost(model_, layer);
  const double kv_share = model_.mla ? 1.0 : double(shard_.kv_heads) / model_.kv_heads;
  const double head_share = double(shard_.heads) / model_.heads;
  const double bytes = params * bytes_per_param_ + s.kv_read_tokens * c.kv_bytes_per_token * kv_share;
  const double flops = 2 * params * s.tokens + c.attention_flops_per_token_per_context * head_share * s.attended;
  return roofline_s(bytes, flops) + profile_.per_layer_overhead_s;
}

double CostModel::ffn_s(int layer, const StepShape& s) const {
  const LayerParts p = layer_parts(model_, layer);
  if (!p.routed_experts) {
    const double params = p.dense_ffn * shard_.ffn_fraction;
    return roofline_s(params * bytes_per_param_, 2 * params * s.tokens);
  }
  // A batch of T tokens, each routed to k of E experts, touches E(1-(1-k/E)^T)
  // distinct experts on average; this node holds `experts` of them.
  const double e = p.routed_experts, k = p.active_experts;
  const double touched_fraction = 1 - portable::powi(1 - k / e, s.tokens);
  const double held_share = shard_.experts / e;
  const double expert_bytes = p.per_expert * shard_.ffn_fraction * bytes_per_param_;
  const double router = p.router;
  const double bytes =
      (shard_.experts * touched_fraction + p.shared_experts) * expert_bytes + router * bytes_per_param_;
  const double routed_flops = 2 * s.tokens * p.per_expert * shard_.ffn_fraction * k * held_share;
  const double flops = 2 * s.tokens * (p.per_expert * shard_.ffn_fraction * p.shared_experts + router);
  // Each routed expert the step touches here costs a dispatch of its own.
  return roofline_s(bytes, flops, routed_flops) + shard_.experts * touched_fraction * profile_.per_expert_overhead_s;
}

double CostModel::lm_head_s(const StepShape& s, double share) const {
  const double params = double(model_.vocab) * model_.hidden * share;
  return roofline_s(params * bytes_per_param_, 2 * params * s.logits);
}

}  // namespace engine
