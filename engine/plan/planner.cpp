#include "engine/plan/planner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "engine/cards/model_math.hpp"

namespace engine {

namespace {

constexpr double kGB = 1e9;

// Largest-remainder apportionment of `total` units by `weights`, at least
// `min_each` per part. REQUIRES: total >= min_each * weights.size().
std::vector<int> apportion(int total, const std::vector<double>& weights, int min_each) {
  const int n = static_cast<int>(weights.size());
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  const int spare = total - min_each * n;
  std::vector<int> out(n, min_each);
  std::vector<std::pair<double, int>> remainders;
  int given = 0;
  for (int i = 0; i < n; ++i) {
    const double exact = spare * weights[i] / sum;
    out[i] += static_cast<int>(exact);
    given += static_cast<int>(exact);
    remainders.push_back({exact - static_cast<int>(exact), -i});  // ties go to the lower index
  }
  std::sort(remainders.rbegin(), remainders.rend());
  for (int k = 0; k < spare - given; ++k) ++out[-remainders[k].second];
  return out;
}

struct Context {
  const Scenario& s;
  const ModelCard& model;
  const Quantization& quant;
  std::vector<const HardwareCard*> hw;
};

Shard empty_shard(const Context& c, int node) {
  Shard sh;
  sh.node = node;
  sh.node_name = c.s.nodes[node].name;
  sh.hardware = c.hw[node]->name;
  sh.memory_bytes = c.hw[node]->memory_bytes * c.hw[node]->usable_memory_fraction;
  sh.experts = c.model.moe ? c.model.moe->experts : 0;
  return sh;
}

// KV heads a node needs for query heads [first, first+count): one per group touched.
int kv_heads_for(const ModelCard& m, int first, int count) {
  if (m.mla || count == 0) return 0;
  const int group = m.heads / m.kv_heads;
  return (first + count - 1) / group - first / group + 1;
}

// Weight and KV bytes of a shard, from the model's per-layer parts.
void account(const Context& c, Shard& sh) {
  double params = 0, kv = 0;
  for (int l = sh.first_layer; l < sh.end_layer; ++l) {
    const LayerParts p = layer_parts(c.model, l);
    params +=
        sh.heads * p.per_query_head + sh.kv_heads * p.per_kv_head + p.replicated + p.router +
        p.dense_ffn * sh.ffn_fraction +
        p.per_expert * (sh.experts * (p.routed_experts ? sh.ffn_fraction : 0) + p.shared_experts * sh.ffn_fraction);
    const double per_layer_kv = layer_cost(c.model, l).kv_bytes_per_token;
    // GQA caches only the KV heads held; MLA's latent is needed whole by every head.
    kv += c.model.mla ? per_layer_kv : per_layer_kv * sh.kv_heads / c.model.kv_heads;
  }
  params += embedding_params(c.model) * sh.vocab_fraction;
  sh.weight_bytes = params * c.quant.bits_per_weight / 8;
  sh.kv_bytes_per_token = kv;
}

Plan finish(const Context& c, Strategy strategy, std::vector<Shard> shards) {
  Plan plan{strategy, std::move(shards), 0};
  double capacity = 1e300;
  for (Shard& sh : plan.shards) {
    account(c, sh);
    if (sh.free_bytes() < 0)
      throw PlanError(
          fmt::format("{}: node {} ({}) needs {:.1f} GB of weights but has {:.1f} GB usable ({:.1f} GB short)",
                      to_string(plan.strategy), sh.node_name, sh.hardware, sh.weight_bytes / kGB, sh.memory_bytes / kGB,
                      -sh.free_bytes() / kGB));
    if (sh.kv_bytes_per_token > 0) capacity = std::min(capacity, sh.free_bytes() / sh.kv_bytes_per_token);
  }
  plan.kv_capacity_tokens = capacity;
  return plan;
}

std::vector<Shard> tensor_shards(const Context& c, const std::vector<double>& share) {
  const int n = static_cast<int>(c.hw.size());
  const std::vector<int> heads = apportion(c.model.heads, share, 1);
  std::vector<Shard> out;
  int first_head = 0;
  for (int i = 0; i < n; ++i) {
    Shard sh = empty_shard(c, i);
    sh.end_layer = c.model.layers;
    sh.heads = heads[i];
    sh.kv_heads = kv_heads_for(c.model, first_head, heads[i]);
    sh.ffn_fraction = share[i];
    sh.vocab_fraction = share[i];
    first_head += heads[i];
    out.push_back(sh);
  }
  return out;
}

Plan plan_tensor(const Context& c) {
  const int n = static_cast<int>(c.hw.size());
  const int kv = c.model.mla ? c.model.heads : c.model.kv_heads;
  if (c.model.heads % n != 0 || kv % n != 0)
    throw PlanError(
        fmt::format("tensor parallel over {} nodes needs the attention heads ({}) and KV heads ({}) to divide by {}; "
                    "use \"tensor-uneven\" to split them unevenly",
                    n, c.model.heads, kv, n));
  return finish(c, Strategy::kTensor, tensor_shards(c, std::vector<double>(n, 1.0 / n)));
}

// Shares follow each node's speed: decode streams weights, so memory bandwidth.
Plan plan_tensor_uneven(const Context& c) {
  const int n = static_cast<int>(c.hw.size());
  if (c.model.heads < n)
    throw PlanError(
        fmt::format("tensor-uneven needs at least one head per node ({} heads, {} nodes)", c.model.heads, n));
  std::vector<double> bw;
  for (const auto* h : c.hw) bw.push_back(h->memory_bandwidth);
  const std::vector<int> heads = apportion(c.model.heads, bw, 1);
  std::vector<double> share;
  // FFN columns and vocabulary follow the same split as the heads, so a node's work is balanced.
  for (int i = 0; i < n; ++i) share.push_back(static_cast<double>(heads[i]) / c.model.heads);
  return finish(c, Strategy::kTensorUneven, tensor_shards(c, share));
}

Plan plan_pipeline(const Context& c) {
  const int n = static_cast<int>(c.hw.size());
  if (c.model.layers < n)
    throw PlanError(fmt::format("pipeline needs at least one layer per node ({} layers, {} nodes)", c.model.layers, n));
  // Layers in proportion to the memory left once the stage's embedding share is placed.
  std::vector<double> free;
  const double embedding = embedding_params(c.model) * c.quant.bits_per_weight / 8;
  for (int i = 0; i < n; ++i) {
    const double usable = c.hw[i]->memory_bytes * c.hw[i]->usable_memory_fraction;
    const double embed_here = (i == 0 ? 0.5 : 0) + (i == n - 1 ? 0.5 : 0);
    free.push_back(std::max(1.0, usable - embedding * embed_here));
  }
  const std::vector<int> layers = apportion(c.model.layers, free, 1);
  std::vector<Shard> out;
  int first = 0;
  for (int i = 0; i < n; ++i) {
    Shard sh = empty_shard(c, i);
    sh.first_layer = first;
    sh.end_layer = first + layers[i];
    sh.heads = c.model.heads;
    sh.kv_heads = c.model.mla ? 0 : c.model.kv_heads;
    sh.vocab_fraction = (i == 0 ? 0.5 : 0) + (i == n - 1 ? 0.5 : 0);  // input embedding first, LM head last
    if (c.model.tied_embeddings) sh.vocab_fraction = (i == 0 || i == n - 1) ? 1 : 0;
    first += layers[i];
    out.push_back(sh);
  }
  return finish(c, Strategy::kPipeline, std::move(out));
}

// Experts split over the nodes; attention, dense layers and embeddings are
// replicated, so each node already holds every token's activations and only
// the expert outputs need combining (one all-reduce per MoE layer).
Plan plan_expert(const Context& c) {
  const int n = static_cast<int>(c.hw.size());
  if (!c.model.moe)
    throw PlanError(fmt::format("expert parallel needs a mixture-of-experts model; {} is dense", c.model.name));
  if (c.model.moe->experts < n) throw PlanError("expert parallel needs at least one expert per node");
  std::vector<double> mem;
  for (const auto* h : c.hw) mem.push_back(h->memory_bytes * h->usable_memory_fraction);
  const std::vector<int> experts = apportion(c.model.moe->experts, mem, 1);
  std::vector<Shard> out;
  for (int i = 0; i < n; ++i) {
    Shard sh = empty_shard(c, i);
    sh.end_layer = c.model.layers;
    sh.heads = c.model.heads;
    sh.kv_heads = c.model.mla ? 0 : c.model.kv_heads;
    sh.experts = experts[i];
    out.push_back(sh);
  }
  return finish(c, Strategy::kExpert, std::move(out));
}

}  // namespace

Plan make_plan(const Scenario& s, const Catalog& catalog, Strategy strategy) {
  Context c{s, catalog.model(s.model), catalog.model(s.model).quant(s.quant), {}};
  for (const auto& node : s.nodes) c.hw.push_back(&catalog.hardware(node.hardware));
  constexpr Plan (*kPlanners[])(const Context&) = {plan_tensor, plan_tensor_uneven, plan_pipeline, plan_expert};
  static_assert(std::size(kPlanners) == Names<Strategy>::value.size(), "one planner per Strategy, in its order");
  return kPlanners[static_cast<int>(strategy)](c);
}

std::string Plan::describe() const {
  std::string out = fmt::format("plan: {} over {} node(s), KV capacity {:.0f} tokens\n", to_string(strategy),
                                shards.size(), kv_capacity_tokens);
  for (const Shard& sh : shards) {
    out += fmt::format(
        "  {:<8} {:<16} layers {:>3}-{:<3} heads {:>3} kv {:>2} ffn {:>5.1f}% experts {:>3} vocab {:>5.1f}%  "
        "weights {:>6.1f} GB, free {:>6.1f} GB\n",
        sh.node_name, sh.hardware, sh.first_layer, sh.end_layer - 1, sh.heads, sh.kv_heads, 100 * sh.ffn_fraction,
        sh.experts, 100 * sh.vocab_fraction, sh.weight_bytes / kGB, sh.free_bytes() / kGB);
  }
  return out;
}

}  // namespace engine
