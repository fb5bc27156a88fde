#include "engine/checkpoint/config_quantization.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>

#include "engine/cards/model_math.hpp"
#include "engine/cards/module_params.hpp"

namespace engine {

namespace {

struct Dtype {
  std::string name;
  double bits = 0;
};

constexpr const char* kDtypes[] = {"bfloat16", "float16", "float32"};
constexpr const char* kQuantMethods[] = {"fp8", "compressed-tensors"};

// transformers v5 writes "dtype", v4 "torch_dtype"; nullopt when neither is there.
std::optional<Dtype> read_dtype(ConfigReader& r) {
  auto v = r.find("dtype");
  if (!v) v = r.find("torch_dtype");
  if (!v) return std::nullopt;
  const std::string d = choice(*v, "dtype", kDtypes);
  if (d == "bfloat16") return Dtype{"bf16", 16};
  return d == "float16" ? Dtype{"f16", 16} : Dtype{"f32", 32};
}

// Weights in Linears, by what a checkpoint's quantizer tells apart: a whole
// model's, summed over layers (model_math's shape).
struct LinearWeights {
  double attention = 0, dense_ffn = 0, shared_experts = 0, routed_experts = 0, lm_head = 0;
  double all() const { return attention + dense_ffn + shared_experts + routed_experts + lm_head; }
};

LinearWeights linear_weights(const ModelCard& m) {
  LinearWeights w;
  for (int layer = 0; layer < m.layers; ++layer) {
    const LayerParts p = layer_parts(m, layer);
    w.attention += p.heads * p.per_query_head + p.kv_heads * p.per_kv_head + p.replicated - norm_params(m);
    w.dense_ffn += p.dense_ffn;
    w.shared_experts += p.shared_experts * p.per_expert;
    w.routed_experts += p.routed_experts * p.per_expert;
  }
  w.lm_head = m.tied_embeddings ? 0 : double(m.vocab) * m.hidden;
  return w;
}

// `quantized` weights at `bits`, the rest of the model at the dtype's.
double average_bits(const ModelCard& m, double quantized, double bits, double dtype_bits) {
  const double total = total_params(m);
  return (quantized * bits + (total - quantized) * dtype_bits) / total;
}

// A group of G weights also stores a scale and a bias of the weights' dtype
// (docs/checkpoint-formats.md#mlx-packing).
Quantization mlx(const MlxQuantization& q, const ModelCard& m, double dtype_bits, const std::string& file) {
  const auto bits = [&](const AffineParams& p) { return p.bits + 2.0 * dtype_bits / p.group_size; };
  const double total = total_params(m);
  double average = bits(q.global);
  for (const auto& [path, p] : q.modules) {
    const auto params = module_params(m, path);
    if (!params)
      throw InputError(
          file, q.json_path(path),
          fmt::format("'{}' is not a module of this {}-layer model, so its bits cannot be weighed", path, m.layers));
    average += ((p ? bits(*p) : dtype_bits) - bits(q.global)) * *params / total;
  }
  return {fmt::format("mlx-{}bit", q.global.bits), average};
}

// docs/checkpoint-formats.md#deepseek-v3-and-kimi-k2: fp8 weights with an f32 weight_scale_inv per block; the
// embeddings, lm_head, norms and the router (not a Linear) stay in the dtype.
Quantization fp8(ConfigReader& block, const ModelCard& m, double dtype_bits) {
  const JsonValue size = block.need("weight_block_size");
  const auto dims = size.elements();
  if (dims.size() != 2) size.fail("must be [rows, columns] of a scale's block");
  const double weights_per_scale = double(dims[0].as<int>(kOne)) * dims[1].as<int>(kOne);
  if (auto keep = block.find("modules_to_not_convert"); keep && !keep->elements().empty())
    keep->fail("modules kept out of fp8 are not planned");
  const LinearWeights w = linear_weights(m);
  return {"fp8", average_bits(m, w.all() - w.lm_head, 8 + 32 / weights_per_scale, dtype_bits)};
}

// compressed-tensors' match: the module's name, or "re:" and a pattern
// matched from the name's start (Python's re.match).
bool ignored(const std::vector<JsonValue>& ignore, const std::string& module) {
  for (const JsonValue& v : ignore) {
    const std::string target = v.as<std::string>();
    if (!target.starts_with("re:")) {
      if (target == module) return true;
      continue;
    }
    try {
      if (std::regex_search(module, std::regex(target.substr(3)), std::regex_constants::match_continuous)) return true;
    } catch (const std::regex_error& e) {
      v.fail(fmt::format("not a regular expression: {}", e.what()));
    }
  }
  return false;
}

// Kimi-K2's int4 (docs/checkpoint-formats.md#deepseek-v3-and-kimi-k2): one group of symmetric int weights, a scale
// of the dtype per group; which Linears it covers, its ignore list says.
Quantization packed_int(ConfigReader& block, const ModelCard& m, double dtype_bits) {
  if (const JsonValue f = block.need("format"); f.as<std::string>() != "pack-quantized")
    f.fail(fmt::format("format '{}' is not planned (pack-quantized is)", f.as<std::string>()));
  const JsonValue groups = block.need("config_groups");
  if (!groups.raw().is_object() || groups.raw().size() != 1) groups.fail("must hold one group (more are not planned)");
  const auto first = groups.raw().begin();
  ConfigReader group{JsonObject(JsonValue(*first, json_pointer(groups.path(), first.key()), groups.file()))};
  bool linear = false;
  for (const JsonValue& t : group.need("targets").elements()) linear |= t.as<std::string>() == "Linear";
  if (!linear) group.fail("targets", "only a group targeting \"Linear\" is planned");
  ConfigReader w{JsonObject(group.need("weights"))};
  if (const JsonValue t = w.need("type"); t.as<std::string>() != "int") t.fail("only int weights are planned");
  if (const JsonValue s = w.need("strategy"); s.as<std::string>() != "group") s.fail("only group scales are planned");
  if (!w.need("symmetric").as<bool>()) w.fail("symmetric", "zero points (asymmetric) are not planned");
  const int bits = w.positive("num_bits");
  if (bits > 8) w.fail("num_bits", fmt::format("{} is not an int width compressed-tensors packs (2 to 8)", bits));
  const double per_weight = bits + dtype_bits / w.positive("group_size");

  std::vector<JsonValue> ignore;
  if (auto v = block.find("ignore")) ignore = v->elements();
  const int moe = m.moe ? m.moe->dense_layers : 0;  // a layer of each kind, named as the checkpoint does
  const LinearWeights lw = linear_weights(m);
  const std::pair<const char*, double> kinds[] = {{"model.layers.0.self_attn.o_proj", lw.attention},
                                                  {"model.layers.0.mlp.gate_proj", lw.dense_ffn},
                                                  {"model.layers.{}.mlp.shared_experts.gate_proj", lw.shared_experts},
                                                  {"model.layers.{}.mlp.experts.0.gate_proj", lw.routed_experts},
                                                  {"lm_head", lw.lm_head}};
  double quantized = 0;
  for (const auto& [name, weights] : kinds)
    if (!ignored(ignore, fmt::format(fmt::runtime(name), moe))) quantized += weights;
  // Routed experts alone quantized: a mixed quant (Quantization::dense_bits_per_weight).
  const bool experts_only = quantized == lw.routed_experts && quantized > 0;
  return {fmt::format("int{}", bits), average_bits(m, quantized, per_weight, dtype_bits),
          experts_only ? dtype_bits : 0};
}

}  // namespace

Quantization config_quantization(ConfigReader& r, const ModelCard& card, const MlxQuantization& q) {
  const std::optional<Dtype> dtype = read_dtype(r);
  // MLX keeps the source's dtype for scales and biases: bf16 or f16 (docs/checkpoint-formats.md#mlx-packing)
  // when unnamed.
  if (q.present) return mlx(q, card, dtype ? dtype->bits : 16, r.value().file());
  if (!dtype) r.fail("torch_dtype", "must name the weights' dtype (bfloat16, float16 or float32) to plan their bytes");
  const auto block = r.find("quantization_config");
  if (!block || !block->raw().is_object() || !block->raw().contains("quant_method")) return {dtype->name, dtype->bits};
  ConfigReader b{JsonObject(*block)};
  const std::string method = choice(b.need("quant_method"), "quantization method", kQuantMethods);
  return method == "fp8" ? fp8(b, card, dtype->bits) : packed_int(b, card, dtype->bits);
}

}  // namespace engine
