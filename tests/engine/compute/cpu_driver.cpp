#include "cpu_driver.hpp"

#include <algorithm>
#include <stdexcept>

namespace testsupport {

engine::Plan even_plan(const engine::ModelConfig& c, engine::Strategy strategy, int ranks) {
  engine::Plan p;
  p.strategy = strategy;
  for (int r = 0; r < ranks; ++r) {
    engine::Shard s;
    s.node = r;
    s.first_layer = 0;
    s.end_layer = c.num_hidden_layers;
    s.heads = c.num_attention_heads;
    s.kv_heads = c.num_key_value_heads;
    s.experts = c.num_experts;
    if (strategy == engine::Strategy::kTensor) {
      s.heads /= ranks;
      s.kv_heads = std::max(1, s.kv_heads / ranks);
      s.ffn_fraction = s.vocab_fraction = 1.0 / ranks;
    } else if (strategy == engine::Strategy::kExpert) {
      s.experts = c.num_experts / ranks;
    } else if (ranks != 1) {
      throw std::invalid_argument("even_plan: tensor or expert only");
    }
    p.shards.push_back(s);
  }
  return p;
}

CpuDriver::CpuDriver(const std::string& dir, const engine::Plan& plan)
    : config_(engine::load_model_config(dir)), plan_(plan), kv_(plan.shards.size()) {
  for (std::size_t r = 0; r < plan.shards.size(); ++r)
    ranks_.push_back(std::make_unique<engine::CpuBackend>(dir, plan, static_cast<int>(r), nullptr, kv_[r]));
}

// The all-reduce: every rank's hidden state becomes the sum of all.
void CpuDriver::sum_hidden() {
  std::vector<float> sum(ranks_[0]->hidden().size(), 0.0f);
  for (auto& b : ranks_)
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += b->hidden()[i];
  for (auto& b : ranks_) std::copy(sum.begin(), sum.end(), b->hidden().begin());
}

int CpuDriver::step(const std::vector<int>& ids) {
  engine::Slot slot;
  slot.request = 1;
  slot.tokens = static_cast<int>(ids.size());
  slot.context_before = context_;
  slot.prefill = context_ == 0;
  slot.emits = true;
  slot.ids.assign(ids.begin(), ids.end());
  engine::StepPlan step;
  step.slots = {slot};
  const engine::StepShape shape = step.shape();
  const bool expert = plan_.strategy == engine::Strategy::kExpert, split = ranks_.size() > 1;
  for (auto& b : ranks_) b->begin_step(step);
  if (split && !expert) sum_hidden();
  // As the executor: expert parallel sums the FFN of the layers the card counts as MoE only.
  const engine::ModelCard card = engine::model_card(config_, "driven", {"f32", 32});
  for (int l = 0; l < config_.num_hidden_layers; ++l) {
    for (auto& b : ranks_) b->run(engine::OpKind::kAttention, l, shape, split && !expert);
    if (split && !expert) sum_hidden();
    const bool split_ffn = split && (!expert || card.is_moe_layer(l));
    for (auto& b : ranks_) b->run(engine::OpKind::kFfn, l, shape, split_ffn);
    if (split_ffn) sum_hidden();
  }
  logits_.clear();
  int best = -1;
  float best_logit = 0;
  // Expert parallel: every rank holds the whole head; tensor: each its vocabulary share, in order.
  for (std::size_t r = 0; r < (expert ? 1 : ranks_.size()); ++r) {
    ranks_[r]->run(engine::OpKind::kLmHead, 0, shape, false);
    const auto choice = ranks_[r]->best_tokens().at(0);
    if (best < 0 || choice.logit > best_logit) {
      best = choice.id;
      best_logit = choice.logit;
    }
    const auto& part = ranks_[r]->last_logits();
    logits_.insert(logits_.end(), part.begin(), part.end());
  }
  context_ += slot.tokens;
  return best;
}

std::vector<int> greedy(CpuDriver& d, const std::vector<int>& prompt, int n, const std::vector<int>& forced,
                        std::vector<float>* margins) {
  std::vector<int> out;
  std::vector<int> feed = prompt;
  for (int i = 0; i < n; ++i) {
    out.push_back(d.step(feed));
    if (margins) {
      std::vector<float> top = d.logits();
      std::partial_sort(top.begin(), top.begin() + 2, top.end(), std::greater<>());
      margins->push_back(top[0] - top[1]);
    }
    feed = {i < static_cast<int>(forced.size()) ? forced[i] : out.back()};
  }
  return out;
}

}  // namespace testsupport
