#include "engine/node/backend.hpp"

namespace engine {

double ModelledBackend::run(OpKind op, int layer, const StepShape& shape, bool) {
  const double t = cost_s(op, layer, shape);
  const double start = rt_.now();
  rt_.compute(t);
  return rt_.now() - start;
}

double ModelledBackend::cost_s(OpKind op, int layer, const StepShape& shape) {
  if (!(shape == shape_)) {
    shape_ = shape;
    cost_s_.clear();
  }
  const std::size_t slot = static_cast<std::size_t>(layer) * 3 + static_cast<std::size_t>(op);
  if (slot >= cost_s_.size()) cost_s_.resize(slot + 1, -1);
  double& t = cost_s_[slot];
  if (t >= 0) return t;
  switch (op) {
    case OpKind::kAttention:
      return t = cost_.attention_s(layer, shape);
    case OpKind::kFfn:
      return t = cost_.ffn_s(layer, shape);
    case OpKind::kLmHead:
      return t = cost_.lm_head_s(shape, lm_head_share_);
  }
  return t = 0;
}

}  // namespace engine
