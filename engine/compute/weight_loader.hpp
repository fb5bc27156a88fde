// The weights of a model directory as CpuBackend computes with them
// (engine/checkpoint/weight_layout.hpp says where they are): each module's block
// computed in place from the mapped file: f32 where its bytes are aligned
// (else from a copy of the rows used), quantized weights kept packed at any
// alignment; 16-bit floats converted to f32.
#pragma once

#include <string>
#include <vector>

#include "engine/checkpoint/weight_layout.hpp"
#include "engine/compute/weight.hpp"

namespace engine {

// Rows [row, row+rows) and columns [col, col+cols) of a module's [out x in] matrix.
struct Block {
  std::int64_t row = 0, rows = 0, col = 0, cols = 0;
};

class WeightLoader {
 public:
  explicit WeightLoader(WeightLayout layout) : layout_(std::move(layout)) {}

  // Module `module` (a path without ".weight") of shape [out x in].
  Weight matrix(const std::string& module, std::int64_t out, std::int64_t in, const Block& b) const;
  // Expert `e`'s `proj` ("gate_proj", "up_proj", "down_proj") in layer `layer`.
  Weight expert(int layer, int e, const std::string& proj, std::int64_t out, std::int64_t in, const Block& b) const;
  // A norm's weight of `n` floats.
  std::vector<float> vector(const std::string& name, std::int64_t n) const;

 private:
  Weight load(const ModuleLayout& l, std::int64_t stack, const Block& b) const;

  WeightLayout layout_;
};

}  // namespace engine
