// CpuBackend driven in one process as the executor drives it, without a
// runtime: one rank, or every rank of a tensor or expert placement with the
// all-reduces done as sums. For token tests that need the logits, which the
// engine's own runs do not report.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/compute/cpu_backend.hpp"

namespace testsupport {

// A placement of `c` on `ranks` ranks: heads, KV heads, FFN columns and
// vocabulary split evenly (tensor) or the experts split (expert).
engine::Plan even_plan(const engine::ModelConfig& c, engine::Strategy strategy, int ranks);

class CpuDriver {
 public:
  CpuDriver(const std::string& dir, const engine::Plan& plan);

  // Feeds `ids` (the prompt, or the one token decoded last) and returns the
  // best next token; `logits()` are its logits over the whole vocabulary.
  int step(const std::vector<int>& ids);
  const std::vector<float>& logits() const { return logits_; }

 private:
  void sum_hidden();

  engine::ModelConfig config_;
  engine::Plan plan_;
  std::vector<std::shared_ptr<engine::ShardKv>> kv_;
  std::vector<std::unique_ptr<engine::CpuBackend>> ranks_;
  int context_ = 0;
  std::vector<float> logits_;
};

// Greedy tokens: the prompt's best token, then `n - 1` more decoded one by one.
// `forced`: feed these tokens instead of the driver's own (teacher forcing), so
// two models are compared step by step on the same context.
std::vector<int> greedy(CpuDriver& d, const std::vector<int>& prompt, int n, const std::vector<int>& forced = {},
                        std::vector<float>* margins = nullptr);

}  // namespace testsupport
