#include "engine/backend.hpp"

namespace engine {

double ModelledBackend::run(OpKind op, int layer, const StepShape& shape, bool) {
  double t = 0;
  switch (op) {
    case OpKind::kAttention:
      t = cost_.attention_s(layer, shape);
      break;
    case OpKind::kFfn:
      t = cost_.ffn_s(layer, shape);
      break;
    case OpKind::kLmHead:
      t = cost_.lm_head_s(shape, lm_head_share_);
      break;
  }
  const double start = rt_.now();
  rt_.compute(t);
  return rt_.now() - start;
}

}  // namespace engine
