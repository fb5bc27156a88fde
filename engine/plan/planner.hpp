// Placement of a model on a cluster: which layers, heads, FFN columns and
// experts each node holds, and what memory that leaves for the KV cache.
// A plan that cannot work is refused with the reason (PlanError).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/input/scenario.hpp"

namespace engine {

class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Shard {
  int node = 0;
  std::string node_name, hardware;
  int first_layer = 0, end_layer = 0;  // layers [first, end) held
  int heads = 0;                       // query heads held
  int kv_heads = 0;                    // KV heads held (replicated when they cannot be split)
  double ffn_fraction = 1;             // share of dense FFN / of each expert's columns
  int experts = 0;                     // routed experts held per MoE layer
  double vocab_fraction = 1;           // share of the embedding and LM head
  double weight_bytes = 0;
  double memory_bytes = 0;        // usable for weights and KV
  double kv_bytes_per_token = 0;  // KV this node stores per cached token

  int layers() const { return end_layer - first_layer; }
  double free_bytes() const { return memory_bytes - weight_bytes; }
};

struct Plan {
  Strategy strategy = Strategy::kTensor;
  std::vector<Shard> shards;      // one per node; pipeline stages in order
  double kv_capacity_tokens = 0;  // tokens of KV the cluster can hold

  // Every node works on every layer (tensor/expert); otherwise stages in turn.
  bool is_pipeline() const { return strategy == Strategy::kPipeline; }
  std::string describe() const;
};

// Throws PlanError with the reason.
Plan make_plan(const Scenario& s, const Catalog& catalog, Strategy strategy);

}  // namespace engine
