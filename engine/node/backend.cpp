#include "engine/node/backend.hpp"

namespace engine {

double ModelledBackend::run(OpKind op, int layer, const StepShape& shape, bool) {
  const OpTime& t = cost(op, layer, shape);
  spent_ += t;
  const double start = rt_.now();
  rt_.compute(t.seconds);
  return rt_.now() - start;
}

const OpTime& ModelledBackend::cost(OpKind op, int layer, const StepShape& shape) {
  if (!(shape == shape_)) {
    shape_ = shape;
    cost_.clear();
  }
  const std::size_t slot = static_cast<std::size_t>(layer) * 3 + static_cast<std::size_t>(op);
  if (slot >= cost_.size()) cost_.resize(slot + 1, OpTime{.seconds = -1});
  OpTime& t = cost_[slot];
  if (t.seconds >= 0) return t;
  switch (op) {
    case OpKind::kAttention:
      return t = model_.attention(layer, shape);
    case OpKind::kFfn:
      return t = model_.ffn(layer, shape);
    case OpKind::kLmHead:
      return t = model_.lm_head(shape, lm_head_share_);
  }
  return t = OpTime{};
}

}  // namespace engine
