// The GPU kernels one transformer layer launches on one node in one step, each
// with the weights and other bytes it reads and the FLOPs it does, derived
// from the model card: what the cost model charges (bytes and FLOPs on the
// hardware card, plus a dispatch per kernel). Elementwise FLOPs are left out:
// a few per element, against two bytes read.
#pragma once

#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/plan/planner.hpp"

namespace engine {

// The work of one step on one node, whatever mix of decode and prefill it holds.
struct StepShape {
  int tokens = 0;             // new tokens processed
  int sequences = 0;          // sequences in the batch
  double attended = 0;        // sum over new tokens of the context each attends to
  double kv_read_tokens = 0;  // sum over sequences of cached tokens read once
  int logits = 0;             // tokens whose next-token logits are needed
  friend bool operator==(const StepShape&, const StepShape&) = default;
};

enum class KernelKind {
  kMatmul,        // weights times activations (a GEMV in decode)
  kExpertMatmul,  // the routed experts' gathered matmul
  kAttention,     // scores and values over the KV cache
  kElementwise,   // norms, RoPE, activation, residual add, router top-k
};

struct Kernel {
  const char* name;
  KernelKind kind;
  double weights = 0;      // quantized parameters read
  double other_bytes = 0;  // activations in and out, KV cache, 16-bit norm weights
  double flops = 0;
  double experts = 0;  // routed experts the kernel reads (expected, kExpertMatmul)
};

// Attention block of `layer` (norm, projections, RoPE, attention, output,
// residual add): GQA, or MLA with its low-rank latents, on the heads `shard` holds.
std::vector<Kernel> attention_kernels(const ModelCard& m, const Shard& shard, const StepShape& s);
// FFN block of `layer`: a dense SwiGLU, or MoE (router, top-k, the routed experts
// the batch touches among those `shard` holds, the shared experts, the combine).
std::vector<Kernel> ffn_kernels(const ModelCard& m, int layer, const Shard& shard, const StepShape& s);
// The final norm and the LM head over `share` of the vocabulary, for the tokens that need logits.
std::vector<Kernel> lm_head_kernels(const ModelCard& m, const StepShape& s, double share);

}  // namespace engine
