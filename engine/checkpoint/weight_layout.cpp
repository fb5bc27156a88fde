#include "engine/checkpoint/weight_layout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <functional>

#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"

namespace engine {

namespace {

using Shape = std::vector<std::int64_t>;

Shape with_lead(std::int64_t stacked, Shape s) {
  if (stacked) s.insert(s.begin(), stacked);
  return s;
}

}  // namespace

WeightLayout::WeightLayout(std::shared_ptr<const Checkpoint> checkpoint, const ModelConfig& config,
                           std::string config_file)
    : ck_(std::move(checkpoint)), c_(config), config_file_(std::move(config_file)) {}

ModuleLayout WeightLayout::module(const std::string& module, std::int64_t out, std::int64_t in,
                                  std::int64_t stacked) const {
  ModuleLayout l;
  l.module = module;
  l.out = out;
  l.in = in;
  const std::string name = module + ".weight", where = "/" + name;
  if (ck_->has(module + ".bias"))
    throw InputError(ck_->file(module + ".bias").path(), "/" + module + ".bias", "additive biases are not supported");
  l.file = &ck_->file(name);
  if (!ck_->has(module + ".scales")) {
    if (l.file->info(name).dtype == "U32")  // before its shape, which says only that it is packed
      throw InputError(l.file->path(), where + "/dtype",
                       fmt::format("packed values, but {}.scales is missing", module));
    l.weight = &l.file->info(name, with_lead(stacked, {out, in}));
    return l;
  }
  if (!c_.quant.present)
    throw InputError(ck_->file(module + ".scales").path(), "/" + module + ".scales",
                     "quantized weights, but config.json has no \"quantization\" block");
  const std::string config_path = c_.quant.json_path(module);
  const auto params = c_.quant.params(module);
  if (!params)
    throw InputError(config_file_, config_path, fmt::format("is false, but {}.scales exists: it is quantized", module));
  l.params = *params;
  const int bits = l.params.bits, group = l.params.group_size;
  if (in % group != 0 || in * bits % 32 != 0)
    throw InputError(
        config_file_, config_path,
        fmt::format("group size {} and {} bits do not divide {}'s input width {}", group, bits, module, in));
  // The shapes say what the file holds: bits = 32·packed/in, group = in/scale columns.
  // `holds(last)`: what a last dimension of `last` would mean, for the error.
  auto check = [&](const SafetensorsFile& f, const std::string& tensor, std::int64_t cols, auto holds) {
    const TensorInfo& t = f.info(tensor);
    const Shape want = with_lead(stacked, {out, cols});
    if (t.shape.size() != want.size() || !std::equal(want.begin(), want.end() - 1, t.shape.begin()))
      throw InputError(f.path(), "/" + tensor + "/shape",
                       fmt::format("is [{}], the config needs [{}]", fmt::join(t.shape, ", "), fmt::join(want, ", ")));
    if (t.shape.back() != cols)
      throw InputError(
          f.path(), "/" + tensor + "/shape",
          fmt::format("[{}] holds {}; config.json's {} says {} bits in groups of {}", fmt::join(t.shape, ", "),
                      holds(static_cast<double>(t.shape.back())), config_path, bits, group));
    return &t;
  };
  l.weight =
      check(*l.file, name, in * bits / 32, [&](double last) { return fmt::format("{}-bit values", last * 32 / in); });
  if (l.weight->dtype != "U32")
    throw InputError(l.file->path(), where + "/dtype", fmt::format("is {}; packed weights are U32", l.weight->dtype));
  const std::string scales = module + ".scales", biases = module + ".biases";
  l.scales_file = &ck_->file(scales);
  l.biases_file = &ck_->file(biases);
  auto groups_of = [&](double last) { return fmt::format("groups of {}", in / last); };
  l.scales = check(*l.scales_file, scales, in / group, groups_of);
  l.biases = check(*l.biases_file, biases, in / group, groups_of);
  if (dtype_bytes(l.scales->dtype) == 0 || l.scales->dtype == "U32")
    throw InputError(l.scales_file->path(), "/" + scales + "/dtype",
                     fmt::format("is {}; scales and biases are floats", l.scales->dtype));
  if (l.scales->dtype != l.biases->dtype)
    throw InputError(
        l.biases_file->path(), "/" + biases + "/dtype",
        fmt::format("is {}, its scales {}: MLX writes both in the weight's dtype", l.biases->dtype, l.scales->dtype));
  return l;
}

std::string WeightLayout::expert_module(int layer, int e, const std::string& proj, std::int64_t& stacked) const {
  const std::string stack = layer_name(layer, "mlp.switch_mlp." + proj);
  stacked = ck_->has(stack + ".weight") ? c_.num_experts : 0;
  return stacked ? stack : layer_name(layer, "mlp.experts." + std::to_string(e) + "." + proj);
}

void WeightLayout::check_all() const {
  const ModelConfig& c = c_;
  const std::int64_t h = c.hidden_size, d = c.head_dim, q = c.num_attention_heads * d, kv = c.num_key_value_heads * d;
  auto norm = [&](const std::string& name, std::int64_t n) {
    const TensorInfo& t = ck_->info(name, {n});
    if (t.dtype == "U32") throw InputError(ck_->file(name).path(), "/" + name + "/dtype", "a norm's weight is floats");
  };
  auto swiglu = [&](const std::function<std::string(const std::string&, std::int64_t&)>& name_of, std::int64_t width) {
    std::int64_t stacked = 0;
    for (const char* proj : {"gate_proj", "up_proj"}) {
      const std::string m = name_of(proj, stacked);
      module(m, width, h, stacked);
    }
    const std::string m = name_of("down_proj", stacked);
    module(m, h, width, stacked);
  };
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    norm(layer_name(l, "input_layernorm.weight"), h);
    norm(layer_name(l, "post_attention_layernorm.weight"), h);
    module(layer_name(l, "self_attn.q_proj"), q, h, 0);
    module(layer_name(l, "self_attn.k_proj"), kv, h, 0);
    module(layer_name(l, "self_attn.v_proj"), kv, h, 0);
    module(layer_name(l, "self_attn.o_proj"), h, q, 0);
    if (c.qk_norm()) {
      norm(layer_name(l, "self_attn.q_norm.weight"), d);
      norm(layer_name(l, "self_attn.k_norm.weight"), d);
    }
    if (!c.sparse_layer(l)) {
      swiglu(
          [&](const std::string& proj, std::int64_t& stacked) {
            stacked = 0;
            return layer_name(l, "mlp." + proj);
          },
          c.intermediate_size);
      continue;
    }
    module(layer_name(l, "mlp.gate"), c.num_experts, h, 0);
    const bool stacked = ck_->has(layer_name(l, "mlp.switch_mlp.gate_proj.weight"));
    for (int e = 0; e < (stacked ? 1 : c.num_experts); ++e)
      swiglu([&](const std::string& proj, std::int64_t& s) { return expert_module(l, e, proj, s); },
             c.moe_intermediate_size);
  }
  module("model.embed_tokens", c.vocab_size, h, 0);
  norm("model.norm.weight", h);
  if (!c.tie_word_embeddings) module("lm_head", c.vocab_size, h, 0);
}

Quantization WeightLayout::quantization() const {
  const ModuleLayout l = module("model.embed_tokens", c_.vocab_size, c_.hidden_size, 0);
  if (!l.scales) {
    std::string name = l.weight->dtype;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return {name, 8.0 * dtype_bytes(l.weight->dtype)};
  }
  // Each group of the global width also stores a scale and a bias.
  const AffineParams& p = c_.quant.global;
  return {fmt::format("mlx-{}bit", p.bits), p.bits + 2.0 * 8 * dtype_bytes(l.scales->dtype) / p.group_size};
}

ModelCard load_model_card(const std::string& dir) {
  const ModelConfig c = load_model_config(dir);
  // Every tensor the config needs, checked now: what would not load is refused before a run.
  const WeightLayout weights(std::make_shared<const Checkpoint>(dir), c,
                             (std::filesystem::path(dir) / kConfigFile).string());
  weights.check_all();
  std::filesystem::path path = std::filesystem::path(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // "models/tiny/"
  return model_card(c, path.filename().string(), weights.quantization());
}

}  // namespace engine
