// Rotary position embeddings as transformers computes them
// (modeling_rope_utils: _compute_default/linear/llama3/yarn_parameters; the
// formulas, with their sources, are in docs/checkpoint-formats.md#rope-scaling): the inverse
// frequencies of a head's pairs and the factor that scales cos and sin.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace engine {

// A config's RoPE, defaults resolved (see parse_rope). Only the fields of
// `type` are read.
struct RopeScaling {
  std::string type = "default";  // "default", "linear", "llama3" or "yarn"
  double theta = 10000.0;
  double factor = 1.0;                       // linear, llama3, yarn
  double low_freq_factor = 1.0;              // llama3
  double high_freq_factor = 4.0;             // llama3
  double original_max_position = 0;          // llama3, yarn
  std::optional<double> attention_factor;    // yarn: given, else computed from factor and mscale
  double beta_fast = 32.0, beta_slow = 1.0;  // yarn
  double mscale = 0, mscale_all_dim = 0;     // yarn; 0: absent
  bool truncate = true;                      // yarn: integer correction range

  bool operator==(const RopeScaling&) const = default;
};

// inv_freq[i] for the pairs i < dim/2 of a head of `dim` (rotate_half pairs (i, i + dim/2)).
std::vector<double> rope_inv_freq(const RopeScaling& r, int dim);

// What cos and sin are multiplied by: 1 but for yarn.
double rope_attention_factor(const RopeScaling& r);

}  // namespace engine
