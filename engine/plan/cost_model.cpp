#include "engine/plan/cost_model.hpp"

#include <algorithm>

#include "engine/cards/model_math.hpp"

namespace engine {

CostModel::CostModel(const ModelCard& m, const Quantization& q, const HardwareCard& hw, const StackProfile& p,
                     const Shard& shard)
    : model_(m),
      bytes_per_param_((q.dense_bits_per_weight > 0 ? q.dense_bits_per_weight : q.bits_per_weight) / 8),
      expert_bytes_per_param_(routed_expert_bits(m, q) / 8),
      hw_(hw),
      profile_(p),
      shard_(shard) {}

OpTime& OpTime::operator+=(const OpTime& o) {
  seconds += o.seconds;
  memory_s += o.memory_s;
  arithmetic_s += o.arithmetic_s;
  dispatch_s += o.dispatch_s;
  floor_s += o.floor_s;
  return *this;
}

OpTime& OpTime::operator-=(const OpTime& o) {
  seconds -= o.seconds;
  memory_s -= o.memory_s;
  arithmetic_s -= o.arithmetic_s;
  dispatch_s -= o.dispatch_s;
  floor_s -= o.floor_s;
  return *this;
}

OpTime CostModel::kernel(const Kernel& k) const {
  const bool routed = k.kind == KernelKind::kExpertMatmul;
  const double bytes = k.weights * (routed ? expert_bytes_per_param_ : bytes_per_param_) + k.other_bytes;
  const double memory_s = bytes / (hw_.memory_bandwidth * profile_.memory_bandwidth_efficiency);
  const double efficiency = routed ? profile_.expert_compute_efficiency : profile_.compute_efficiency;
  const double compute_s = k.flops / (hw_.peak_flops * efficiency);
  const double seconds =
      std::max(memory_s, compute_s) + profile_.per_kernel_overhead_s + k.experts * profile_.per_expert_overhead_s;
  const double dispatch_s = profile_.per_kernel_overhead_s + k.experts * profile_.per_expert_overhead_s;
  const double floor_s = std::max(bytes / hw_.memory_bandwidth, k.flops / hw_.peak_flops);
  if (memory_s >= compute_s) return {seconds, memory_s, 0, dispatch_s, floor_s};
  return {seconds, 0, compute_s, dispatch_s, floor_s};
}

OpTime CostModel::kernels(const std::vector<Kernel>& list) const {
  OpTime t;
  for (const Kernel& k : list) t += kernel(k);
  return t;
}

OpTime CostModel::attention(int, const StepShape& s) const { return kernels(attention_kernels(model_, shard_, s)); }

OpTime CostModel::ffn(int layer, const StepShape& s) const { return kernels(ffn_kernels(model_, layer, shard_, s)); }

OpTime CostModel::lm_head(const StepShape& s, double share) const {
  return kernels(lm_head_kernels(model_, s, share));
}

}  // namespace engine
