#include "engine/plan/cost_model.hpp"

#include <algorithm>

#include "engine/cards/model_math.hpp"

namespace engine {

CostModel::CostModel(const ModelCard& m, const Quantization& q, const HardwareCard& hw, const StackCard& p,
                     const Shard& shard)
    : model_(m),
      bytes_per_param_((q.dense_bits_per_weight > 0 ? q.dense_bits_per_weight : q.bits_per_weight) / 8),
      expert_bytes_per_param_(routed_expert_bits(m, q) / 8),
      hw_(hw),
      profile_(p),
      shard_(shard) {}

double CostModel::kernel_s(const Kernel& k) const {
  const bool routed = k.kind == KernelKind::kExpertMatmul;
  const double bytes = k.weights * (routed ? expert_bytes_per_param_ : bytes_per_param_) + k.other_bytes;
  const double memory_s = bytes / (hw_.memory_bandwidth * profile_.memory_bandwidth_efficiency);
  const double efficiency = routed ? profile_.expert_compute_efficiency : profile_.compute_efficiency;
  const double compute_s = k.flops / (hw_.peak_flops * efficiency);
  return std::max(memory_s, compute_s) + profile_.per_kernel_overhead_s + k.experts * profile_.per_expert_overhead_s;
}

double CostModel::kernels_s(const std::vector<Kernel>& kernels) const {
  double t = 0;
  for (const Kernel& k : kernels) t += kernel_s(k);
  return t;
}

double CostModel::attention_s(int, const StepShape& s) const { return kernels_s(attention_kernels(model_, shard_, s)); }

double CostModel::ffn_s(int layer, const StepShape& s) const {
  return kernels_s(ffn_kernels(model_, layer, shard_, s));
}

double CostModel::lm_head_s(const StepShape& s, double share) const {
  return kernels_s(lm_head_kernels(model_, s, share));
}

}  // namespace engine
