#include "engine/checkpoint/mlx_quant_writer.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>

#include "engine/checkpoint/checkpoint_writer.hpp"

namespace engine {

namespace {

// float → bfloat16 bits, rounding to nearest even (as a cast in MLX does).
std::uint16_t to_bf16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(std::uint16_t b) { return std::bit_cast<float>(std::uint32_t(b) << 16); }

// A module's stored tensors: the packed words and the bf16 scales and biases.
struct Quantized {
  std::vector<unsigned char> packed, scales, biases;
};

// Rows of `in` values, per group of `group`: w ≈ scale·q + bias with
// q in [0, 2^bits), scale = (max−min)/(2^bits−1), bias = min (both as bf16).
// The q form a little-endian bitstream per row: value j at bits [j·b, (j+1)·b).
void quantize_rows(const float* w, std::int64_t rows, std::int64_t in, int bits, int group, Quantized& out) {
  const int levels = (1 << bits) - 1;
  const std::int64_t row_bytes = in * bits / 8;
  const std::size_t packed_at = out.packed.size();
  out.packed.resize(packed_at + rows * row_bytes, 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    unsigned char* stream = out.packed.data() + packed_at + r * row_bytes;
    for (std::int64_t g = 0; g < in / group; ++g) {
      const float* x = w + r * in + g * group;
      const auto [lo, hi] = std::minmax_element(x, x + group);
      const std::uint16_t scale_bits = to_bf16(*hi > *lo ? (*hi - *lo) / levels : 1.0f), bias_bits = to_bf16(*lo);
      const float scale = from_bf16(scale_bits), bias = from_bf16(bias_bits);
      out.scales.insert(out.scales.end(), {std::uint8_t(scale_bits), std::uint8_t(scale_bits >> 8)});
      out.biases.insert(out.biases.end(), {std::uint8_t(bias_bits), std::uint8_t(bias_bits >> 8)});
      for (int i = 0; i < group; ++i) {
        const long q = std::clamp(std::lround((x[i] - bias) / scale), 0L, static_cast<long>(levels));
        const std::int64_t bit = (g * group + i) * bits;
        for (int k = 0; k < bits; ++k)
          if ((q >> k) & 1) stream[(bit + k) / 8] |= static_cast<unsigned char>(1u << ((bit + k) % 8));
      }
    }
  }
}

std::span<const unsigned char> bytes_of(const std::vector<float>& v) {
  return {reinterpret_cast<const unsigned char*>(v.data()), v.size() * sizeof(float)};
}

}  // namespace

void write_mlx_quantized(const std::string& dir, ModelConfig c, const std::vector<NamedTensor>& f32, int bits,
                         int group_size, int shards) {
  std::map<std::string, const NamedTensor*> by_name;
  for (const NamedTensor& t : f32) by_name[t.name] = &t;
  c.quant = MlxQuantization{};
  c.quant.present = true;
  c.quant.global = {group_size, bits};
  // What `out` points into: map nodes and deque elements stay put as they are added.
  std::map<std::string, Quantized> quantized;     // by module path
  std::deque<std::vector<float>> stacked_floats;  // unquantized stacked experts
  std::vector<RawTensor> out;
  auto quantize = [&](const std::string& module, const std::vector<const NamedTensor*>& parts) {
    const std::int64_t rows = parts[0]->shape[0], in = parts[0]->shape[1];
    const bool router = module.ends_with("mlp.gate");
    const int b = router ? 8 : bits, g = router ? 64 : group_size;
    std::vector<std::int64_t> shape = {rows, in};
    if (parts.size() > 1 || module.find("switch_mlp") != std::string::npos)
      shape.insert(shape.begin(), static_cast<std::int64_t>(parts.size()));
    if (in % g != 0) {  // mlx-lm's predicate: left as it is
      if (parts.size() == 1) {
        out.push_back({module + ".weight", "F32", shape, bytes_of(parts[0]->data)});
      } else {
        auto& all = stacked_floats.emplace_back();
        for (const NamedTensor* p : parts) all.insert(all.end(), p->data.begin(), p->data.end());
        out.push_back({module + ".weight", "F32", shape, bytes_of(all)});
      }
      return;
    }
    if (router) c.quant.modules[module] = AffineParams{g, b};
    Quantized& q = quantized[module];
    for (const NamedTensor* p : parts) quantize_rows(p->data.data(), rows, in, b, g, q);
    std::vector<std::int64_t> packed = shape, groups = shape;
    packed.back() = in * b / 32;
    groups.back() = in / g;
    out.push_back({module + ".weight", "U32", packed, q.packed});
    out.push_back({module + ".scales", "BF16", groups, q.scales});
    out.push_back({module + ".biases", "BF16", groups, q.biases});
  };
  // Each module's parts: one matrix, or every expert of a layer's projection.
  std::vector<std::pair<std::string, std::vector<const NamedTensor*>>> modules;
  for (const NamedTensor& t : f32) {
    if (!t.name.ends_with(".weight") || t.shape.size() != 2) continue;
    const std::string module = t.name.substr(0, t.name.size() - 7);
    const auto experts = module.find(".mlp.experts.");
    if (experts == std::string::npos) {
      modules.push_back({module, {&t}});
      continue;
    }
    // model.layers.L.mlp.experts.E.proj → model.layers.L.mlp.switch_mlp.proj, expert E at index E.
    const std::string rest = module.substr(experts + 13);
    const std::string proj = rest.substr(rest.find('.') + 1);
    const std::string stack = module.substr(0, experts) + ".mlp.switch_mlp." + proj;
    auto it = std::find_if(modules.begin(), modules.end(), [&](const auto& m) { return m.first == stack; });
    if (it == modules.end()) it = modules.insert(modules.end(), {stack, {}});
    it->second.push_back(&t);
  }
  for (const auto& [module, parts] : modules) quantize(module, parts);
  for (const NamedTensor& t : f32)
    if (t.shape.size() == 1) out.push_back({t.name, "F32", t.shape, bytes_of(t.data)});
  std::sort(out.begin(), out.end(), [](const RawTensor& a, const RawTensor& b) { return a.name < b.name; });
  write_model_config(dir, c);
  write_checkpoint(dir, out, {{"format", "mlx"}}, {shards, /*always_index=*/true, /*pad=*/false});
}

}  // namespace engine
