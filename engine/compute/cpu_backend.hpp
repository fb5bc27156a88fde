// Real math for one shard of a model directory (engine/checkpoint/model_config.hpp): a
// Llama/Qwen3 decoder with RMSNorm, RoPE, grouped-query attention over a KV
// cache per request, SwiGLU or top-k MoE, and an LM head with greedy argmax.
// It loads only the slices its shard holds, placed as the planner says:
// tensor parallel splits heads, FFN columns and vocabulary; pipeline splits
// layers; expert parallel splits the experts. Weights are used in place from
// the mapped files where aligned (engine/compute/weight_loader.hpp); MLX
// quantized ones stay packed.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/checkpoint/model_config.hpp"
#include "engine/compute/thread_pool.hpp"
#include "engine/compute/weight.hpp"
#include "engine/node/backend.hpp"
#include "engine/plan/planner.hpp"

namespace engine {

// [begin, end) of a dimension a shard holds.
struct Range {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
  bool contains(int i) const { return i >= begin && i < end; }
  bool operator==(const Range&) const = default;
};

// What shard `rank` of `plan` holds of a model: its layers, query and KV
// heads, FFN and expert columns, experts, and vocabulary rows.
struct ShardSlices {
  Range layers, heads, kv_heads, ffn, expert_ffn, experts, embedding, lm_head;
  bool operator==(const ShardSlices&) const = default;
};
ShardSlices shard_slices(const ModelConfig& c, const Plan& plan, int rank);

// One layer of one request: [positions x kv heads held x head_dim].
struct KvCache {
  std::vector<float> k, v;
};

// A shard's KV caches, which outlive the backend of an epoch: a step run again
// by the same members (recovery's step rerun, a new epoch with a new backend)
// resumes on the context the earlier steps cached.
struct ShardKv {
  ShardSlices slices;
  std::map<int, std::vector<KvCache>> by_request;  // one cache per layer held
};

class CpuBackend : public Backend {
 public:
  // Loads shard `rank` of `plan` from the model directory `dir` (InputError
  // when a tensor is missing or of the wrong shape). Each op charges
  // `timing`'s time when given (simulation: the modelled, deterministic
  // time), else the real elapsed time.
  // `kv`: where this rank's caches of earlier epochs are kept (empty at the
  // start of a run). Caches of other slices are of no use: they are replaced by
  // new ones, and a backend still running for a node left out keeps its own.
  // `pool`: the threads its matrix products run on (none: the caller's alone).
  CpuBackend(const std::string& dir, const Plan& plan, int rank, std::unique_ptr<Backend> timing,
             std::shared_ptr<ShardKv>& kv, std::shared_ptr<cpu::ThreadPool> pool = nullptr);
  ~CpuBackend() override;

  double run(OpKind op, int layer, const StepShape& shape, bool partial) override;
  bool computes() const override { return true; }
  void begin_step(const StepPlan& step) override;
  std::span<float> hidden() override { return hidden_; }
  std::vector<TokenChoice> best_tokens() const override { return best_; }
  // The logits of the last emitting slot of the step, over the vocabulary rows held (for tests' margins).
  const std::vector<float>& last_logits() const { return logits_; }

 private:
  struct Expert;
  struct Layer;
  void attention(const Layer& w, int layer, bool residual);
  void ffn(const Layer& w, bool residual, bool partial);
  void lm_head();

  ModelConfig config_;
  ShardSlices slices_;
  int rank_;
  bool expert_;  // expert parallel placement
  std::unique_ptr<Backend> timing_;
  std::shared_ptr<cpu::ThreadPool> pool_;
  std::vector<double> inv_freq_;  // RoPE's, per pair of a head
  double attention_factor_;       // scales RoPE's cos and sin (YaRN)
  std::vector<Layer> layers_;
  Weight embedding_, lm_head_;
  std::vector<float> final_norm_;
  std::shared_ptr<ShardKv> kv_;
  StepPlan step_;
  std::vector<float> hidden_;
  // Each step's intermediates, kept from step to step: allocated and zeroed
  // anew, they were 3% of a prefill on one thread (each is written whole before it is read).
  std::vector<float> x_, q_, k_, v_, out_, gate_, up_;
  // RoPE's cos and sin for each of the step's tokens, [tokens x head_dim/2]:
  // the same in every layer, so worked out once a step (per layer, they were
  // a twentieth of a prefill on one thread).
  std::vector<float> rope_cos_, rope_sin_;
  std::vector<TokenChoice> best_;
  std::vector<float> logits_;
};

// The backends of a run on the model directory `dir`: CpuBackend on every
// shard, charging the modelled time when `modelled_time` (simulation, so runs
// stay deterministic), else the real elapsed time, computing on `threads`
// threads (one pool for the backends this factory makes: a simulation runs its
// ranks one at a time). Each shard's KV caches carry over from one epoch's
// backend to the next.
BackendFactory cpu_backends(const std::string& dir, bool modelled_time, int threads = 1);

}  // namespace engine
