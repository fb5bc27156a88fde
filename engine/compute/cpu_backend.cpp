#include "engine/compute/cpu_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "engine/compute/cpu_ops.hpp"
#include "engine/compute/weight_loader.hpp"

namespace engine {

namespace {

// Shard `rank`'s part of `total` when shards hold the shares `share` of it, in order.
Range share_range(const Plan& plan, int rank, int total, double Shard::*share) {
  double before = 0;
  for (int r = 0; r < rank; ++r) before += plan.shards[r].*share;
  const double upto = before + plan.shards[rank].*share;
  return {static_cast<int>(std::lround(before * total)), static_cast<int>(std::lround(upto * total))};
}

// Rows (or columns) [r.begin·per, r.end·per) of a module, whole the other way.
Block rows_of(Range r, std::int64_t per, std::int64_t width) { return {r.begin * per, r.size() * per, 0, width}; }
Block cols_of(Range r, std::int64_t per, std::int64_t height) { return {0, height, r.begin * per, r.size() * per}; }

// The first n values of v, grown to them if shorter: scratch written whole before it is read.
std::span<float> scratch(std::vector<float>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
  return {v.data(), n};
}

}  // namespace

ShardSlices shard_slices(const ModelConfig& c, const Plan& plan, int rank) {
  const Shard& sh = plan.shards.at(rank);
  const Range all_vocab{0, c.vocab_size};
  ShardSlices s;
  s.layers = {sh.first_layer, sh.end_layer};
  s.heads = {0, c.num_attention_heads};
  s.ffn = {0, c.intermediate_size};
  s.expert_ffn = {0, c.moe_intermediate_size};
  s.experts = {0, c.num_experts};
  s.embedding = s.lm_head = all_vocab;
  if (plan.strategy == Strategy::kTensor || plan.strategy == Strategy::kTensorUneven) {
    int first_head = 0;
    for (int r = 0; r < rank; ++r) first_head += plan.shards[r].heads;
    s.heads = {first_head, first_head + sh.heads};
    s.ffn = share_range(plan, rank, c.intermediate_size, &Shard::ffn_fraction);
    s.expert_ffn = share_range(plan, rank, c.moe_intermediate_size, &Shard::ffn_fraction);
    s.embedding = s.lm_head = share_range(plan, rank, c.vocab_size, &Shard::vocab_fraction);
  } else if (plan.strategy == Strategy::kExpert) {
    int first = 0;
    for (int r = 0; r < rank; ++r) first += plan.shards[r].experts;
    s.experts = {first, first + sh.experts};
  } else {  // pipeline: the first stage embeds, the last one predicts
    if (rank != 0) s.embedding = {};
    if (rank != static_cast<int>(plan.shards.size()) - 1) s.lm_head = {};
  }
  const int group = c.num_attention_heads / c.num_key_value_heads;
  s.kv_heads = {s.heads.begin / group, s.heads.begin / group + sh.kv_heads};
  return s;
}

struct CpuBackend::Expert {
  Weight gate, up, down;  // gate/up: [columns held x hidden]; down: [hidden x columns held]
};

struct CpuBackend::Layer {
  std::vector<float> input_norm, post_norm, q_norm, k_norm;
  Weight q, k, v, o;            // q/k/v: rows of the heads held; o: their columns
  bool sparse = false;          // MoE (ModelConfig::sparse_layer), else dense
  Expert dense;                 // dense layers
  Weight router;                // MoE: [experts x hidden], every expert
  std::vector<Expert> experts;  // MoE: the experts held
};

CpuBackend::CpuBackend(const std::string& dir, const Plan& plan, int rank, std::unique_ptr<Backend> timing,
                       std::shared_ptr<ShardKv>& kv, std::shared_ptr<cpu::ThreadPool> pool)
    : config_(load_model_config(dir)),
      slices_(shard_slices(config_, plan, rank)),
      rank_(rank),
      expert_(plan.strategy == Strategy::kExpert),
      timing_(std::move(timing)),
      pool_(std::move(pool)),
      inv_freq_(rope_inv_freq(config_.rope, config_.head_dim)),
      attention_factor_(rope_attention_factor(config_.rope)) {
  if (!kv || !(kv->slices == slices_)) kv = std::make_shared<ShardKv>(ShardKv{slices_, {}});
  kv_ = kv;
  const WeightLoader load(WeightLayout(std::make_shared<const Checkpoint>(dir), config_,
                                       (std::filesystem::path(dir) / kConfigFile).string()));
  const ModelConfig& c = config_;
  const std::int64_t h = c.hidden_size, d = c.head_dim, q_out = c.num_attention_heads * d;
  const std::int64_t kv_out = c.num_key_value_heads * d;
  auto swiglu_part = [&](auto&& module, std::int64_t width, Range r) {
    return Expert{module("gate_proj", width, h, rows_of(r, 1, h)), module("up_proj", width, h, rows_of(r, 1, h)),
                  module("down_proj", h, width, cols_of(r, 1, h))};
  };
  for (int l = slices_.layers.begin; l < slices_.layers.end; ++l) {
    Layer w;
    w.input_norm = load.vector(layer_name(l, "input_layernorm.weight"), h);
    w.post_norm = load.vector(layer_name(l, "post_attention_layernorm.weight"), h);
    w.q = load.matrix(layer_name(l, "self_attn.q_proj"), q_out, h, rows_of(slices_.heads, d, h));
    w.k = load.matrix(layer_name(l, "self_attn.k_proj"), kv_out, h, rows_of(slices_.kv_heads, d, h));
    w.v = load.matrix(layer_name(l, "self_attn.v_proj"), kv_out, h, rows_of(slices_.kv_heads, d, h));
    w.o = load.matrix(layer_name(l, "self_attn.o_proj"), h, q_out, cols_of(slices_.heads, d, h));
    if (c.qk_norm()) {
      w.q_norm = load.vector(layer_name(l, "self_attn.q_norm.weight"), d);
      w.k_norm = load.vector(layer_name(l, "self_attn.k_norm.weight"), d);
    }
    w.sparse = c.sparse_layer(l);
    if (w.sparse) {
      w.router = load.matrix(layer_name(l, "mlp.gate"), c.num_experts, h, {0, c.num_experts, 0, h});
      for (int e = slices_.experts.begin; e < slices_.experts.end; ++e)
        w.experts.push_back(swiglu_part([&](const std::string& proj, std::int64_t out, std::int64_t in,
                                            const Block& b) { return load.expert(l, e, proj, out, in, b); },
                                        c.moe_intermediate_size, slices_.expert_ffn));
    } else {
      w.dense = swiglu_part([&](const std::string& proj, std::int64_t out, std::int64_t in,
                                const Block& b) { return load.matrix(layer_name(l, "mlp." + proj), out, in, b); },
                            c.intermediate_size, slices_.ffn);
    }
    layers_.push_back(std::move(w));
  }
  if (slices_.embedding.size() > 0)
    embedding_ = load.matrix("model.embed_tokens", c.vocab_size, h, rows_of(slices_.embedding, 1, h));
  if (slices_.lm_head.size() > 0) {
    // Tied: the embedding (quantized or not) is the LM head, as MLX's QuantizedEmbedding.as_linear.
    lm_head_ = load.matrix(c.tie_word_embeddings ? "model.embed_tokens" : "lm_head", c.vocab_size, h,
                           rows_of(slices_.lm_head, 1, h));
    final_norm_ = load.vector("model.norm.weight", h);
  }
  // Every matrix the steps multiply by, mapped now, one per piece on the pool's
  // threads (different matrices: no shared page-table lock), as llama.cpp maps
  // its weights at load (MAP_POPULATE): faulted in a few pages at a time by the
  // first step instead, they cost a 256-token prefill more than its math. Not
  // an untied embedding: a lookup reads one row per token.
  std::vector<const Weight*> products{&lm_head_};
  for (const Layer& w : layers_) {
    products.insert(products.end(), {&w.q, &w.k, &w.v, &w.o, &w.router, &w.dense.gate, &w.dense.up, &w.dense.down});
    for (const Expert& e : w.experts) products.insert(products.end(), {&e.gate, &e.up, &e.down});
  }
  cpu::run_blocks(pool_.get(), static_cast<int>(products.size()), 1, [&](int first, int count) {
    for (int i = first; i < first + count; ++i) products[i]->prefault();
  });
}

CpuBackend::~CpuBackend() = default;

void CpuBackend::begin_step(const StepPlan& step) {
  step_ = step;
  // A request with a cache has a slot in every step until it ends (it decodes,
  // or its prefill goes on chunk after chunk): absent, it is over.
  std::erase_if(kv_->by_request, [&](const auto& cache) {
    return std::none_of(step.slots.begin(), step.slots.end(), [&](const Slot& s) { return s.request == cache.first; });
  });
  const int h = config_.hidden_size;
  const std::size_t half = config_.head_dim / 2;
  hidden_.assign(static_cast<std::size_t>(step.shape().tokens) * h, 0.0f);
  rope_cos_.resize(static_cast<std::size_t>(step.shape().tokens) * half);
  rope_sin_.resize(rope_cos_.size());
  std::size_t row = 0;
  for (const Slot& slot : step.slots) {
    if (static_cast<int>(slot.ids.size()) != slot.tokens)
      throw std::runtime_error("CpuBackend: a step slot carries no token ids");
    for (int i = 0; i < slot.tokens; ++i) {
      const std::size_t at = (row + i) * half;
      cpu::rope_angles(slot.context_before + i, inv_freq_, attention_factor_, {rope_cos_.data() + at, half},
                       {rope_sin_.data() + at, half});
    }
    for (int id : slot.ids) {
      if (id < 0 || id >= config_.vocab_size) throw std::runtime_error("CpuBackend: token id out of the vocabulary");
      if (slices_.embedding.contains(id))
        embedding_.row(id - slices_.embedding.begin, {hidden_.data() + row * h, static_cast<std::size_t>(h)});
      ++row;
    }
  }
}

double CpuBackend::run(OpKind op, int layer, const StepShape& shape, bool partial) {
  const auto start = std::chrono::steady_clock::now();
  const bool residual = !partial || rank_ == 0;
  switch (op) {
    case OpKind::kAttention:
      attention(layers_.at(layer - slices_.layers.begin), layer, residual);
      break;
    case OpKind::kFfn:
      ffn(layers_.at(layer - slices_.layers.begin), residual, partial);
      break;
    case OpKind::kLmHead:
      lm_head();
      break;
  }
  if (timing_) return timing_->run(op, layer, shape, partial);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void CpuBackend::attention(const Layer& w, int layer, bool residual) {
  const ModelConfig& c = config_;
  const int h = c.hidden_size, d = c.head_dim, t = static_cast<int>(hidden_.size()) / h;
  const int nq = slices_.heads.size(), nkv = slices_.kv_heads.size();
  const int group = c.num_attention_heads / c.num_key_value_heads;
  cpu::ThreadPool* pool = pool_.get();
  const std::span<float> x = scratch(x_, hidden_.size()), q = scratch(q_, static_cast<std::size_t>(t) * nq * d),
                         k = scratch(k_, static_cast<std::size_t>(t) * nkv * d), v = scratch(v_, k.size()),
                         out = scratch(out_, q.size());
  cpu::rms_norm(hidden_, t, h, w.input_norm, c.rms_norm_eps, x, pool);
  Weight::linear(x, t, std::initializer_list<Weight::Product>{{&w.q, q}, {&w.k, k}, {&w.v, v}}, pool);
  if (c.qk_norm()) {
    cpu::rms_norm(q, t * nq, d, w.q_norm, c.rms_norm_eps, q, pool);
    cpu::rms_norm(k, t * nkv, d, w.k_norm, c.rms_norm_eps, k, pool);
  }
  int row = 0;
  for (const Slot& slot : step_.slots) {
    auto& caches = kv_->by_request[slot.request];
    caches.resize(slices_.layers.size());
    KvCache& cache = caches[layer - slices_.layers.begin];
    // A re-prefill after a re-placement starts over: keep only what precedes this chunk.
    const std::size_t kept = static_cast<std::size_t>(slot.context_before) * nkv * d;
    if (cache.k.size() < kept) throw std::runtime_error("CpuBackend: KV cache shorter than the step's context");
    cache.k.resize(kept);
    cache.v.resize(kept);
    // Rotated on the pool's threads, 16 tokens a piece (a prefill's rotations
    // ran on one thread while the others waited).
    cpu::run_blocks(pool, slot.tokens, 16, [&](int first, int count) {
      for (int i = first; i < first + count; ++i) {
        const std::size_t at = static_cast<std::size_t>(row + i) * (d / 2);
        const std::span<const float> cos{rope_cos_.data() + at, static_cast<std::size_t>(d / 2)},
            sin{rope_sin_.data() + at, static_cast<std::size_t>(d / 2)};
        float* qi = q.data() + static_cast<std::size_t>(row + i) * nq * d;
        float* ki = k.data() + static_cast<std::size_t>(row + i) * nkv * d;
        for (int head = 0; head < nq; ++head) cpu::rope({qi + head * d, static_cast<std::size_t>(d)}, cos, sin);
        for (int head = 0; head < nkv; ++head) cpu::rope({ki + head * d, static_cast<std::size_t>(d)}, cos, sin);
      }
    });
    const std::size_t first = static_cast<std::size_t>(row) * nkv * d,
                      size = static_cast<std::size_t>(slot.tokens) * nkv * d;
    cache.k.insert(cache.k.end(), k.begin() + first, k.begin() + first + size);
    cache.v.insert(cache.v.end(), v.begin() + first, v.begin() + first + size);
    // Each KV head's query heads attend to the cache up to their own
    // position, a piece per KV head and block of tokens on the pool's threads
    // (on one thread, a prefill's attention and a decode step's left the
    // others waiting): for one token, its heads in one pass over the cache;
    // for more, each head's tokens of the block in one pass (blocks of 64: a
    // 256-token prefill ran ~5% faster than with 32, each block packing the
    // keys for sgemm again, and than with 128, two blocks to share between threads).
    constexpr int kBlock = 64;
    const int blocks = (slot.tokens + kBlock - 1) / kBlock;
    cpu::run_blocks(pool, blocks * nkv, 1, [&](int first, int count) {
      for (int p = first; p < first + count; ++p) {
        const int i0 = p / nkv * kBlock, tokens = std::min(kBlock, slot.tokens - i0), kv_head = p % nkv;
        const int head0 = std::max(0, (slices_.kv_heads.begin + kv_head) * group - slices_.heads.begin);
        const int heads = std::min(nq, (slices_.kv_heads.begin + kv_head + 1) * group - slices_.heads.begin) - head0;
        if (heads <= 0) continue;
        const float *keys = cache.k.data() + kv_head * d, *values = cache.v.data() + kv_head * d;
        const std::size_t at = (static_cast<std::size_t>(row + i0) * nq + head0) * d;
        if (tokens == 1) {
          cpu::attend(q.data() + at, d, heads, slot.context_before + i0 + 1, 0, keys, values, nkv * d, d,
                      out.data() + at, d);
          continue;
        }
        for (int head = 0; head < heads; ++head)
          cpu::attend(q.data() + at + head * d, nq * d, tokens, slot.context_before + i0 + 1, 1, keys, values, nkv * d,
                      d, out.data() + at + head * d, nq * d);
      }
    });
    row += slot.tokens;
  }
  w.o.linear(out, t, hidden_, residual, pool);
}

void CpuBackend::ffn(const Layer& w, bool residual, bool partial) {
  const ModelConfig& c = config_;
  const int h = c.hidden_size, t = static_cast<int>(hidden_.size()) / h;
  cpu::ThreadPool* pool = pool_.get();
  const std::span<float> x = scratch(x_, hidden_.size());
  cpu::rms_norm(hidden_, t, h, w.post_norm, c.rms_norm_eps, x, pool);
  auto swiglu = [&](const Expert& e, std::span<const float> in, int rows, int width, std::span<float> out,
                    bool accumulate) {
    const std::span<float> gate = scratch(gate_, static_cast<std::size_t>(rows) * width),
                           up = scratch(up_, gate.size());
    Weight::linear(in, rows, std::initializer_list<Weight::Product>{{&e.gate, gate}, {&e.up, up}}, pool);
    cpu::swiglu(gate, up, pool);
    e.down.linear(gate, rows, out, accumulate, pool);
  };
  if (!w.sparse) {
    // Expert parallel holds every dense FFN whole: when the executor sums the
    // ranks' outputs (a dense layer the card counts as MoE), rank 0 alone adds it.
    if (partial && expert_ && rank_ != 0) {
      if (!residual) std::fill(hidden_.begin(), hidden_.end(), 0.0f);
      return;
    }
    swiglu(w.dense, x, t, slices_.ffn.size(), hidden_, residual);
    return;
  }
  std::vector<float> logits(static_cast<std::size_t>(t) * c.num_experts);
  w.router.linear(x, t, logits, false, pool);
  // Tokens routed to each expert held here, with their router weights.
  std::vector<std::vector<std::pair<int, float>>> routed(slices_.experts.size());
  for (int i = 0; i < t; ++i)
    for (auto [e, weight] : cpu::route(
             {logits.data() + static_cast<std::size_t>(i) * c.num_experts, static_cast<std::size_t>(c.num_experts)},
             c.num_experts_per_tok, c.norm_topk_prob))
      if (slices_.experts.contains(e)) routed[e - slices_.experts.begin].push_back({i, weight});
  std::vector<float> sum(hidden_.size(), 0.0f);
  for (std::size_t e = 0; e < routed.size(); ++e) {
    if (routed[e].empty()) continue;
    const int n = static_cast<int>(routed[e].size());
    std::vector<float> in(static_cast<std::size_t>(n) * h), out(in.size());
    for (int j = 0; j < n; ++j)
      std::copy_n(x.begin() + static_cast<std::size_t>(routed[e][j].first) * h, h, in.begin() + j * h);
    swiglu(w.experts[e], in, n, slices_.expert_ffn.size(), out, false);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < h; ++i)
        sum[static_cast<std::size_t>(routed[e][j].first) * h + i] += routed[e][j].second * out[j * h + i];
  }
  for (std::size_t i = 0; i < sum.size(); ++i) hidden_[i] = residual ? hidden_[i] + sum[i] : sum[i];
}

void CpuBackend::lm_head() {
  const int h = config_.hidden_size, vocab = slices_.lm_head.size();
  if (vocab == 0) throw std::logic_error("CpuBackend: LM head run on a shard without one");
  best_.clear();
  std::vector<float> x(h);
  logits_.resize(vocab);
  int row = 0;
  for (const Slot& slot : step_.slots) {
    row += slot.tokens;
    if (!slot.emits) continue;
    cpu::rms_norm({hidden_.data() + static_cast<std::size_t>(row - 1) * h, static_cast<std::size_t>(h)}, 1, h,
                  final_norm_, config_.rms_norm_eps, x);
    lm_head_.linear(x, 1, logits_, false, pool_.get());
    const auto best = std::max_element(logits_.begin(), logits_.end());  // the first of equals: the lowest id
    best_.push_back({*best, slices_.lm_head.begin + static_cast<int>(best - logits_.begin())});
  }
}

BackendFactory cpu_backends(const std::string& dir, bool modelled_time, int threads) {
  // By the epoch's rank: a simulation runs every shard in this one process.
  auto kept = std::make_shared<std::map<int, std::shared_ptr<ShardKv>>>();
  auto pool = threads > 1 ? std::make_shared<cpu::ThreadPool>(threads) : nullptr;
  return [dir, modelled_time, kept, pool](Runtime& rt, const Plan& plan, std::unique_ptr<Backend> modelled) {
    return std::make_unique<CpuBackend>(dir, plan, rt.rank(), modelled_time ? std::move(modelled) : nullptr,
                                        (*kept)[rt.rank()], pool);
  };
}

}  // namespace engine
