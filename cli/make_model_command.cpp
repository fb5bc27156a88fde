// meshinfer make-model: a small model with seeded random weights, in the
// Hugging Face layout a scenario can name by path (for tests and demos).
#include <fmt/format.h>

#include <memory>

#include "cli/commands.hpp"
#include "engine/checkpoint/random_model.hpp"

namespace cli {

namespace {

struct MakeModelOptions {
  std::string out;
  engine::ModelConfig config;
  std::string type;      // empty: qwen3_moe with experts, else qwen3
  int head_dim = 0;      // 0: hidden / heads
  int intermediate = 0;  // 0: 2 x hidden (dense), hidden (per expert)
  unsigned long long seed = 1;
  std::string quant;  // "", "mlx-4bit", "mlx-8bit"
  engine::ModelFiles files;
};

int make_model(MakeModelOptions o) {
  engine::ModelConfig& c = o.config;
  c.model_type = !o.type.empty() ? o.type : c.num_experts > 0 ? "qwen3_moe" : "qwen3";
  c.head_dim = o.head_dim > 0 ? o.head_dim : c.hidden_size / std::max(1, c.num_attention_heads);
  c.intermediate_size = o.intermediate > 0 ? o.intermediate : 2 * c.hidden_size;
  c.moe_intermediate_size = c.num_experts > 0 ? (o.intermediate > 0 ? o.intermediate : c.hidden_size) : 0;
  if (c.num_experts == 0) c.num_experts_per_tok = 0;
  o.files.bits = o.quant == "mlx-4bit" ? 4 : o.quant == "mlx-8bit" ? 8 : 0;
  engine::write_random_model(o.out, c, o.seed, o.files);
  fmt::print(
      "{}: {} model, {} layers, hidden {}, {} heads / {} KV heads, {} experts (top {}), vocab {}, seed {}, {}{}\n",
      o.out, c.model_type, c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.num_key_value_heads,
      c.num_experts, c.num_experts_per_tok, c.vocab_size, o.seed,
      o.quant.empty() ? "f32" : fmt::format("{} (groups of {})", o.quant, o.files.group_size),
      o.files.shards > 1 ? fmt::format(", {} shards", o.files.shards) : "");
  return 0;
}

}  // namespace

void add_make_model_command(CLI::App& app, int& status) {
  auto o = std::make_shared<MakeModelOptions>();
  engine::ModelConfig& c = o->config = engine::tiny_model_config();
  auto* cmd = app.add_subcommand(
      "make-model", "write a small random model (config.json + model.safetensors, sharded or MLX-quantized)");
  cmd->add_option("--out", o->out, "model directory to write")->required();
  cmd->add_option("--layers", c.num_hidden_layers, "decoder layers")->capture_default_str();
  cmd->add_option("--hidden", c.hidden_size, "hidden size")->capture_default_str();
  cmd->add_option("--heads", c.num_attention_heads, "attention heads")->capture_default_str();
  cmd->add_option("--kv-heads", c.num_key_value_heads, "KV heads")->capture_default_str();
  cmd->add_option("--head-dim", o->head_dim, "head dimension (default hidden / heads)");
  cmd->add_option("--intermediate", o->intermediate,
                  "FFN width: dense (default 2 x hidden) or per expert (default hidden)");
  cmd->add_option("--experts", c.num_experts, "routed experts per layer (0: dense)")->capture_default_str();
  cmd->add_option("--top-k", c.num_experts_per_tok, "experts per token")->capture_default_str();
  cmd->add_option("--vocab", c.vocab_size, "vocabulary size")->capture_default_str();
  cmd->add_option("--type", o->type, "llama, qwen3 or qwen3_moe (default qwen3_moe with experts, else qwen3)");
  cmd->add_option("--seed", o->seed, "seed of the weights")->capture_default_str();
  cmd->add_option("--quant", o->quant, "MLX affine-quantized weights, as mlx-lm writes them (default f32)")
      ->check(CLI::IsMember({"mlx-4bit", "mlx-8bit"}));
  cmd->add_option("--group-size", o->files.group_size, "group size of the quantized weights")
      ->check(CLI::IsMember({32, 64, 128}))
      ->capture_default_str();
  cmd->add_option("--shards", o->files.shards, "weight files, with model.safetensors.index.json when more than one")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([o, &status] { status = make_model(*o); });
}

}  // namespace cli
