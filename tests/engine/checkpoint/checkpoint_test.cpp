// The weight files users have: Hugging Face shards with their index, shards
// globbed without one, and their refusals (a shard missing, a tensor missing
// from its shard, a tensor in two shards); weights computed in place from the
// mapped file when aligned, from a copy when not (MLX writes unaligned files).
#include "engine/checkpoint/checkpoint.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "../compute/cpu_driver.hpp"
#include "engine/base/error.hpp"
#include "engine/checkpoint/random_model.hpp"
#include "engine/checkpoint/weight_layout.hpp"
#include "engine/compute/weight_loader.hpp"
#include "support/cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testsupport::fresh_dir;

engine::ModelConfig small() {
  engine::ModelConfig c = engine::tiny_model_config();
  c.num_hidden_layers = 2;
  c.hidden_size = 64;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.moe_intermediate_size = 64;
  c.num_experts = 4;
  c.vocab_size = 128;
  return c;
}

std::vector<int> tokens(const std::string& dir) {
  testsupport::CpuDriver d(dir, testsupport::even_plan(small(), engine::Strategy::kTensor, 1));
  return testsupport::greedy(d, {1, 2, 3, 4}, 6);
}

template <class F>
engine::InputError refusal(F f) {
  try {
    f();
  } catch (const engine::InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no InputError";
  return engine::InputError("", "", "");
}

json read_json(const std::string& path) { return json::parse(testsupport::read_file(path)); }
void write_json(const std::string& path, const json& j) { std::ofstream(path) << j.dump(2); }

TEST(Checkpoint, ShardsWithTheirIndexComputeAsTheSingleFile) {
  const std::string one = fresh_dir("ckpt-one"), three = fresh_dir("ckpt-three");
  engine::write_random_model(one, small(), 5);
  engine::write_random_model(three, small(), 5, {.shards = 3});
  EXPECT_FALSE(fs::exists(three + "/model.safetensors"));
  const json index = read_json(three + "/model.safetensors.index.json");
  EXPECT_EQ(index["weight_map"]["model.embed_tokens.weight"], "model-00001-of-00003.safetensors");
  EXPECT_EQ(index["weight_map"]["lm_head.weight"], "model-00003-of-00003.safetensors");
  const engine::Checkpoint ck(three);
  EXPECT_EQ(ck.files().size(), 3u);
  std::uint64_t data = 0;
  for (const auto& f : ck.files())
    for (const auto& [name, t] : f->tensors()) data += t.end - t.begin;
  EXPECT_EQ(index["metadata"]["total_size"], data);
  EXPECT_EQ(engine::load_model_card(three).quantizations.at(0).name, "f32");
  const auto want = tokens(one);
  EXPECT_EQ(tokens(three), want);
  // Without the index, mlx-lm's loader globs model*.safetensors; so do we.
  fs::remove(three + "/model.safetensors.index.json");
  EXPECT_EQ(tokens(three), want);
}

TEST(Checkpoint, IndexNamingAMissingShardOrAMisplacedTensorIsRefused) {
  const std::string dir = fresh_dir("ckpt-bad-index");
  engine::write_random_model(dir, small(), 5, {.shards = 2});
  const std::string index = dir + "/model.safetensors.index.json";
  const json good = read_json(index);
  json moved = good;  // a tensor of shard 1 said to be in shard 2
  moved["weight_map"]["model.embed_tokens.weight"] = "model-00002-of-00002.safetensors";
  write_json(index, moved);
  auto e = refusal([&] { engine::Checkpoint ck(dir); });
  EXPECT_EQ(e.file(), dir + "/model-00002-of-00002.safetensors");
  EXPECT_EQ(e.json_path(), "/model.embed_tokens.weight");
  EXPECT_NE(e.reason().find("missing tensor"), std::string::npos) << e.what();

  json gone = good;
  gone["weight_map"]["lm_head.weight"] = "model-00009-of-00009.safetensors";
  write_json(index, gone);
  e = refusal([&] { engine::Checkpoint ck(dir); });
  EXPECT_EQ(e.file(), index);
  EXPECT_EQ(e.json_path(), "/weight_map/lm_head.weight");
  EXPECT_NE(e.reason().find("does not exist"), std::string::npos) << e.what();

  json dropped = good;  // the card checks every tensor the config needs
  dropped["weight_map"].erase("model.norm.weight");
  write_json(index, dropped);
  e = refusal([&] { engine::load_model_card(dir); });
  EXPECT_EQ(e.file(), index);
  EXPECT_EQ(e.json_path(), "/weight_map/model.norm.weight");
}

TEST(Checkpoint, ATensorInTwoShardsIsRefused) {
  const std::string dir = fresh_dir("ckpt-duplicate");
  engine::write_safetensors(dir + "/model-00001-of-00002.safetensors", {{"a", {2}, {1, 2}}, {"b", {1}, {3}}});
  engine::write_safetensors(dir + "/model-00002-of-00002.safetensors", {{"b", {1}, {4}}});
  const auto e = refusal([&] { engine::Checkpoint ck(dir); });
  EXPECT_EQ(e.file(), dir + "/model-00002-of-00002.safetensors");
  EXPECT_EQ(e.json_path(), "/b");
  EXPECT_NE(e.reason().find("model-00001-of-00002.safetensors"), std::string::npos) << e.what();
}

// A Qwen3-MoE checkpoint with MLX's stacked experts loads; one missing a
// stacked tensor is refused when the scenario is read, not by failing requests.
TEST(Checkpoint, StackedExpertsLoadAndAMissingOneIsRefusedAtLoad) {
  const std::string dir = fresh_dir("ckpt-switch-mlp");
  engine::write_random_model(dir, small(), 5, {.shards = 2, .bits = 8, .group_size = 32});
  const engine::Checkpoint ck(dir);
  EXPECT_EQ(ck.info("model.layers.1.mlp.switch_mlp.down_proj.weight").shape,
            (std::vector<std::int64_t>{4, 64, 64 * 8 / 32}));
  EXPECT_FALSE(ck.has("model.layers.1.mlp.experts.0.down_proj.weight"));
  EXPECT_EQ(engine::load_model_card(dir).quantizations.at(0).name, "mlx-8bit");
  const std::string index = dir + "/model.safetensors.index.json";
  json j = read_json(index);
  j["weight_map"].erase("model.layers.1.mlp.switch_mlp.up_proj.scales");
  write_json(index, j);
  const auto e = refusal([&] { engine::load_model_card(dir); });
  EXPECT_EQ(e.json_path(), "/model.layers.1.mlp.switch_mlp.up_proj.weight/dtype");
  EXPECT_NE(e.reason().find(".scales is missing"), std::string::npos) << e.what();
}

// Unquantized experts stacked as mlp.switch_mlp.* ([E, out, in], how mlx-lm
// saves a bf16 or f32 Qwen3-MoE) compute as the per-expert tensors do.
TEST(Checkpoint, UnquantizedStackedExpertsComputeAsPerExpertOnes) {
  const std::string hf = fresh_dir("ckpt-experts-hf"), mlx = fresh_dir("ckpt-experts-stacked");
  engine::write_random_model(hf, small(), 6);
  const engine::SafetensorsFile f(hf + "/model.safetensors");
  std::vector<engine::NamedTensor> out;
  std::map<std::string, engine::NamedTensor> stacks;
  for (const auto& [name, t] : f.tensors()) {
    const auto at = name.find(".mlp.experts.");
    if (at == std::string::npos) {
      out.push_back({name, t.shape, f.read(name, t.shape)});
      continue;
    }
    const std::string rest = name.substr(at + 13), proj = rest.substr(rest.find('.') + 1);
    const int e = std::stoi(rest.substr(0, rest.find('.')));
    engine::NamedTensor& stack = stacks[name.substr(0, at) + ".mlp.switch_mlp." + proj];
    stack.shape = {small().num_experts, t.shape[0], t.shape[1]};
    stack.data.resize(stack.shape[0] * stack.shape[1] * stack.shape[2]);
    const auto values = f.read(name, t.shape);
    std::copy(values.begin(), values.end(), stack.data.begin() + e * values.size());
  }
  for (auto& [name, t] : stacks) out.push_back({name, t.shape, t.data});
  fs::copy_file(hf + "/config.json", mlx + "/config.json");
  engine::write_safetensors(mlx + "/model.safetensors", out);
  EXPECT_EQ(tokens(mlx), tokens(hf));
  EXPECT_EQ(engine::Checkpoint(mlx).has("model.layers.0.mlp.experts.0.up_proj.weight"), false);
}

// An f32 weight is mapped iff its bytes sit at an aligned file offset; a
// quantized one always is (MLX's writer does not align tensors; the kernels
// read them at any alignment).
TEST(Checkpoint, WeightsAreMappedWhenAlignedAndCopiedWhenNot) {
  for (const bool mlx : {false, true}) {
    const std::string dir = fresh_dir(mlx ? "ckpt-map-mlx" : "ckpt-map-hf");
    engine::write_random_model(dir, small(), 5, {.shards = 2, .bits = mlx ? 4 : 0});
    const engine::ModelConfig c = engine::load_model_config(dir);
    auto ck = std::make_shared<const engine::Checkpoint>(dir);
    const engine::WeightLoader load(engine::WeightLayout(ck, c, dir + "/config.json"));
    int misaligned = 0;
    for (int l = 0; l < c.num_hidden_layers; ++l)
      for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
        const std::string module = engine::layer_name(l, std::string("self_attn.") + proj);
        const auto& f = ck->file(module + ".weight");
        const bool aligned = f.file_offset(f.info(module + ".weight")) % 4 == 0;
        const int rows = (proj == std::string("q_proj") ? c.num_attention_heads : c.num_key_value_heads) * c.head_dim;
        const engine::Weight w = load.matrix(module, rows, c.hidden_size, {0, rows, 0, c.hidden_size});
        EXPECT_EQ(w.quantized(), mlx);
        EXPECT_EQ(w.copied(), !mlx && !aligned) << module;
        misaligned += !aligned;
      }
    // Hugging Face's padding keeps every F32 tensor aligned; MLX's layout leaves some words misaligned.
    if (mlx)
      EXPECT_GT(misaligned, 0);
    else
      EXPECT_EQ(misaligned, 0);
  }
}

// What a user runs: make-model writes an MLX 4-bit model in shards, and a
// scenario naming it computes real tokens.
TEST(Checkpoint, MadeMlxModelRunsInAScenario) {
  const std::string dir = fresh_dir("ckpt-cli");
  const auto made = testsupport::run_cli("make-model --out " + dir +
                                         "/q4 --layers 2 --hidden 64 --heads 4 --kv-heads 2 --experts 4 --vocab 128 "
                                         "--quant mlx-4bit --group-size 32 --shards 2");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  EXPECT_TRUE(fs::exists(dir + "/q4/model-00002-of-00002.safetensors"));
  const engine::ModelCard card = engine::load_model_card(dir + "/q4");
  EXPECT_EQ(card.quantizations.at(0).name, "mlx-4bit");
  EXPECT_DOUBLE_EQ(card.quantizations.at(0).bits_per_weight, 4 + 32.0 / 32);  // bf16 scale and bias per 32
  const json scenario = {
      {"name", "mlx"},
      {"cluster",
       {{"nodes", {{{"name", "a"}, {"hardware", "m3-ultra-512gb"}}, {{"name", "b"}, {"hardware", "m3-ultra-512gb"}}}},
        {"fabric", {{"type", "full-mesh"}, {"link", "tb5-tcp"}}}}},
      {"model", {{"path", "q4"}}},
      {"parallelism", "expert"},
      {"workload", {{"requests", 2}, {"prompt_tokens", 6}, {"output_tokens", 4}, {"prefill_chunk", 4}}}};
  write_json(dir + "/scenario.json", scenario);
  const auto run = testsupport::run_cli("run --quiet " + dir + "/scenario.json --out " + dir + "/out");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const json report = read_json(dir + "/out/report.json");
  for (const auto& r : report["requests"]) EXPECT_EQ(r["output_ids"].size(), 4u) << r.dump();
}

}  // namespace
