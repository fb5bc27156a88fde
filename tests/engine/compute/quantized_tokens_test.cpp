// MLX affine-quantized checkpoints (make-model --quant) computed from their
// packed weights give the greedy tokens of the engine's own f32 path on the
// same weights dequantized here, by this file's own reading of docs/checkpoint-formats.md#mlx-packing
// (bit by bit from the LSB-first stream), wherever the f32 path's top-two
// logit margin is not a near tie; and the same under tensor and expert
// placements, whose blocks cut quantization groups in two.
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "cpu_driver.hpp"
#include "engine/checkpoint/checkpoint.hpp"
#include "engine/checkpoint/random_model.hpp"
#include "support/cli_runner.hpp"

namespace {

using engine::ModelConfig;

float bf16(const unsigned char* p) {
  std::uint16_t b;
  std::memcpy(&b, p, 2);
  return std::bit_cast<float>(std::uint32_t(b) << 16);
}

// Element j of a row's little-endian bitstream of `bits`-bit values.
unsigned value_at(const unsigned char* row, std::int64_t j, int bits) {
  unsigned v = 0;
  for (int k = 0; k < bits; ++k) {
    const std::int64_t bit = j * bits + k;
    v |= ((row[bit / 8] >> (bit % 8)) & 1u) << k;
  }
  return v;
}

// `qdir` as an F32 Hugging Face checkpoint in `out`: every quantized module
// dequantized (w = scale·q + bias per group), MLX's stacked experts unstacked.
void write_dequantized(const std::string& qdir, const std::string& out) {
  ModelConfig c = engine::load_model_config(qdir);
  const engine::Checkpoint ck(qdir);
  std::vector<engine::NamedTensor> tensors;
  for (const auto& file : ck.files())
    for (const auto& [name, t] : file->tensors()) {
      if (!name.ends_with(".weight")) continue;
      const std::string module = name.substr(0, name.size() - 7);
      if (!ck.has(module + ".scales")) {
        tensors.push_back({name, t.shape, file->read(name, t.shape)});
        continue;
      }
      const engine::AffineParams p = *c.quant.params(module);
      const auto& s = ck.info(module + ".scales");
      const auto& b = ck.info(module + ".biases");
      const std::int64_t in = t.shape.back() * 32 / p.bits, out_rows = t.shape[t.shape.size() - 2];
      const std::int64_t stack = t.shape.size() == 3 ? t.shape[0] : 1, groups = in / p.group_size;
      for (std::int64_t e = 0; e < stack; ++e) {
        std::vector<float> w(out_rows * in);
        for (std::int64_t r = 0; r < out_rows; ++r) {
          const std::int64_t row = e * out_rows + r;
          const unsigned char* q = file->bytes(t) + row * in * p.bits / 8;
          for (std::int64_t j = 0; j < in; ++j) {
            const std::int64_t g = row * groups + j / p.group_size;
            w[r * in + j] = bf16(ck.file(module + ".scales").bytes(s) + 2 * g) * value_at(q, j, p.bits) +
                            bf16(ck.file(module + ".biases").bytes(b) + 2 * g);
          }
        }
        std::string hf = name;
        if (const auto at = module.find(".switch_mlp."); at != std::string::npos)
          hf = module.substr(0, at) + ".experts." + std::to_string(e) + module.substr(at + 11) + ".weight";
        tensors.push_back({hf, {out_rows, in}, std::move(w)});
      }
    }
  c.quant = {};
  std::filesystem::create_directories(out);
  engine::write_model_config(out, c);
  engine::write_safetensors(out + "/model.safetensors", tensors);
}

ModelConfig small(const std::string& type) {
  ModelConfig c = engine::tiny_model_config();
  c.model_type = type;
  c.num_hidden_layers = 2;
  c.hidden_size = 128;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 32;  // a head's columns of o_proj are half a group of 64: tensor parallel cuts groups
  c.intermediate_size = 192;
  c.moe_intermediate_size = 96;
  c.vocab_size = 256;
  if (type != "qwen3_moe") c.num_experts = c.num_experts_per_tok = c.moe_intermediate_size = 0;
  return c;
}

const std::vector<int> kPrompt = {3, 17, 99, 5, 200, 42, 7};
constexpr int kTokens = 12;
// Fed after each step to both paths (teacher forcing): a random model with a
// tied embedding predicts the token it was fed, so its own tokens would repeat.
const std::vector<int> kFed = {9, 140, 77, 31, 250, 64, 128, 1, 190, 33, 222};
constexpr float kNearTie = 1e-3f;  // summation order alone moves logits by about 1e-5

// The quantized model's greedy tokens against the dequantized f32 path's, both
// fed the same tokens; a difference is allowed only at a near tie.
void expect_same_tokens(const std::string& name, const ModelConfig& c, const engine::ModelFiles& files) {
  const std::string dir = testsupport::fresh_dir(name), qdir = dir + "/q", ref = dir + "/f32";
  engine::write_random_model(qdir, c, 11, files);
  write_dequantized(qdir, ref);
  testsupport::CpuDriver f32(ref, testsupport::even_plan(c, engine::Strategy::kTensor, 1));
  std::vector<float> margins;
  const auto want = testsupport::greedy(f32, kPrompt, kTokens, kFed, &margins);
  std::vector<std::pair<engine::Strategy, int>> placements = {{engine::Strategy::kTensor, 1},
                                                              {engine::Strategy::kTensor, 2}};
  if (c.moe()) placements.push_back({engine::Strategy::kExpert, 2});
  for (const auto& [strategy, ranks] : placements) {
    testsupport::CpuDriver q(qdir, testsupport::even_plan(c, strategy, ranks));
    const auto got = testsupport::greedy(q, kPrompt, kTokens, kFed);
    for (int i = 0; i < kTokens; ++i) {
      if (got[i] != want[i]) {
        EXPECT_LT(margins[i], kNearTie) << name << " " << engine::to_string(strategy) << " x" << ranks << ": token "
                                        << i << " is " << got[i] << ", f32 " << want[i];
      }
    }
  }
  std::string report;
  for (float m : margins) report += " " + std::to_string(m);
  std::printf("%s: top-2 margins of the f32 path:%s\n", name.c_str(), report.c_str());
  std::set<int> distinct(want.begin(), want.end());
  EXPECT_GT(distinct.size(), 2u) << "degenerate tokens";
}

TEST(QuantizedTokens, Qwen3Moe4BitStackedExpertsInShards) {
  expect_same_tokens("quant-moe-4bit", small("qwen3_moe"), {.shards = 3, .bits = 4, .group_size = 64});
}

TEST(QuantizedTokens, Qwen3Dense8BitGroupsOf32TiedEmbedding) {
  ModelConfig c = small("qwen3");
  c.tie_word_embeddings = true;  // the quantized embedding is the LM head
  expect_same_tokens("quant-qwen3-8bit", c, {.shards = 1, .bits = 8, .group_size = 32});
}

TEST(QuantizedTokens, Llama4BitGroupsOf128) {
  expect_same_tokens("quant-llama-4bit", small("llama"), {.shards = 2, .bits = 4, .group_size = 128});
}

TEST(QuantizedTokens, Qwen3Moe8BitGroupsOf32) {
  expect_same_tokens("quant-moe-8bit", small("qwen3_moe"), {.shards = 1, .bits = 8, .group_size = 32});
}

}  // namespace
