// Catalog cards and derived figures, checked against arithmetic written out
// here from the published architectures (docs/reference-facts.md#model-shapes).
#include "engine/cards/catalog.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/base/error.hpp"
#include "engine/cards/model_math.hpp"

namespace engine {
namespace {

namespace fs = std::filesystem;

const Catalog& cat() { return Catalog::builtin(); }

// Relative closeness, for published round figures ("235B").
void expect_near_rel(double actual, double expected, double rel) {
  EXPECT_NEAR(actual, expected, expected * rel) << "actual " << actual << ", expected " << expected;
}

// --- Parameter counts ---------------------------------------------------------

// GQA attention: q and o are hidden x heads*head_dim, k and v hidden x kv_heads*head_dim.
double gqa_attention(double hidden, double heads, double kv_heads, double head_dim) {
  return 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim;
}

TEST(CatalogParams, Llama33_70bLayerAndTotal) {
  const ModelCard& m = cat().model("llama-3.3-70b");
  // 8192 x 8192 (q) + 8192 x 1024 (k, v) + 8192 x 8192 (o) = 150,994,944.
  const double attention = 8192.0 * 8192 + 2 * 8192.0 * 1024 + 8192.0 * 8192;
  EXPECT_DOUBLE_EQ(attention, 150994944.0);
  const double ffn = 3 * 8192.0 * 28672;  // 704,643,072
  const double norms = 2 * 8192.0;
  const LayerCost c = layer_cost(m, 0);
  EXPECT_DOUBLE_EQ(c.params, attention + ffn + norms);
  EXPECT_DOUBLE_EQ(c.active_params, c.params);    // dense
  const double embeddings = 2 * 128256.0 * 8192;  // input embedding + untied LM head
  EXPECT_DOUBLE_EQ(embedding_params(m), embeddings);
  EXPECT_DOUBLE_EQ(total_params(m), 80 * (attention + ffn + norms) + embeddings);
  expect_near_rel(total_params(m), 70.6e9, 0.02);
  EXPECT_DOUBLE_EQ(active_params(m), total_params(m));
}

TEST(CatalogParams, OtherLlamasMatchTheirNames) {
  // 405B: 126 x (GQA 128/8 heads at 16384 + 3 x 16384 x 53248) + 2 x 128256 x 16384.
  const double l405 =
      126 * (gqa_attention(16384, 128, 8, 128) + 3 * 16384.0 * 53248 + 2 * 16384.0) + 2 * 128256.0 * 16384;
  EXPECT_DOUBLE_EQ(total_params(cat().model("llama-3.1-405b")), l405);
  expect_near_rel(l405, 405e9, 0.02);

  const double l8 = 32 * (gqa_attention(4096, 32, 8, 128) + 3 * 4096.0 * 14336 + 2 * 4096.0) + 2 * 128256.0 * 4096;
  EXPECT_DOUBLE_EQ(total_params(cat().model("llama-3.1-8b")), l8);
  expect_near_rel(l8, 8.03e9, 0.02);

  // Llama-3.2-3B ties the embedding and LM head: one vocab x hidden matrix.
  const ModelCard& m3 = cat().model("llama-3.2-3b");
  EXPECT_TRUE(m3.tied_embeddings);
  EXPECT_DOUBLE_EQ(embedding_params(m3), 128256.0 * 3072);
  const double l3 = 28 * (gqa_attention(3072, 24, 8, 128) + 3 * 3072.0 * 8192 + 2 * 3072.0) + 128256.0 * 3072;
  EXPECT_DOUBLE_EQ(total_params(m3), l3);
  expect_near_rel(l3, 3.21e9, 0.02);
}

TEST(CatalogParams, Qwen3MoeTotalAndActive) {
  const ModelCard& m = cat().model("qwen3-235b-a22b");
  // head_dim 128 with 64 heads: q is 4096 x 8192, not 4096 x 4096.
  const double attention = gqa_attention(4096, 64, 4, 128);  // 71,303,168
  EXPECT_DOUBLE_EQ(attention, 71303168.0);
  const double expert = 3 * 4096.0 * 1536;
  const double router = 4096.0 * 128;
  const double norms = 2 * 4096.0;
  const double layer_total = attention + 128 * expert + router + norms;
  const double layer_active = attention + 8 * expert + router + norms;
  const LayerCost c = layer_cost(m, 0);  // every Qwen3 layer is MoE
  EXPECT_DOUBLE_EQ(c.params, layer_total);
  EXPECT_DOUBLE_EQ(c.active_params, layer_active);

  const double embeddings = 2 * 151936.0 * 4096;
  EXPECT_DOUBLE_EQ(total_params(m), 94 * layer_total + embeddings);
  EXPECT_DOUBLE_EQ(active_params(m), 94 * layer_active + embeddings);
  expect_near_rel(total_params(m), 235e9, 0.02);
  expect_near_rel(active_params(m), 22e9, 0.02);
}

// DeepSeek-V3 MLA attention, 128 heads at hidden 7168.
double deepseek_attention(double heads) {
  const double q = 7168.0 * 1536 + 1536.0 * heads * (128 + 64);         // q_a, q_b
  const double kv = 7168.0 * (512 + 64) + 512.0 * heads * (128 + 128);  // kv_a, kv_b
  const double o = heads * 128 * 7168.0;
  return q + kv + o;
}

TEST(CatalogParams, DeepSeekV31MlaMoeTotalAndActive) {
  const ModelCard& m = cat().model("deepseek-v3.1");
  const double attention = deepseek_attention(128);
  EXPECT_DOUBLE_EQ(attention, 187105280.0);
  const double norms = 2 * 7168.0 + 1536 + 512;  // two RMSNorms + q and kv latent norms
  const double dense_ffn = 3 * 7168.0 * 18432;
  const double expert = 3 * 7168.0 * 2048;
  const double router = 7168.0 * 256;
  const double dense_layer = attention + dense_ffn + norms;
  const double moe_layer = attention + (256 + 1) * expert + router + norms;
  const double moe_active = attention + (8 + 1) * expert + router + norms;

  EXPECT_FALSE(m.is_moe_layer(2));
  EXPECT_TRUE(m.is_moe_layer(3));
  EXPECT_DOUBLE_EQ(layer_cost(m, 0).params, dense_layer);
  EXPECT_DOUBLE_EQ(layer_cost(m, 3).params, moe_layer);
  EXPECT_DOUBLE_EQ(layer_cost(m, 60).active_params, moe_active);

  const double embeddings = 2 * 129280.0 * 7168;
  EXPECT_DOUBLE_EQ(total_params(m), 3 * dense_layer + 58 * moe_layer + embeddings);
  EXPECT_DOUBLE_EQ(active_params(m), 3 * dense_layer + 58 * moe_active + embeddings);
  expect_near_rel(total_params(m), 671e9, 0.02);
  expect_near_rel(active_params(m), 37e9, 0.02);
  // R1 is the same architecture.
  EXPECT_DOUBLE_EQ(total_params(cat().model("deepseek-r1-671b")), total_params(m));
}

TEST(CatalogParams, KimiK2IsATrillionWith32bActive) {
  const ModelCard& m = cat().model("kimi-k2-thinking");
  const double attention = deepseek_attention(64);
  const double norms = 2 * 7168.0 + 1536 + 512;
  const double expert = 3 * 7168.0 * 2048;
  const double dense_layer = attention + 3 * 7168.0 * 18432 + norms;
  const double moe_layer = attention + (384 + 1) * expert + 7168.0 * 384 + norms;
  const double moe_active = attention + (8 + 1) * expert + 7168.0 * 384 + norms;
  const double embeddings = 2 * 163840.0 * 7168;
  EXPECT_DOUBLE_EQ(total_params(m), dense_layer + 60 * moe_layer + embeddings);
  EXPECT_DOUBLE_EQ(active_params(m), dense_layer + 60 * moe_active + embeddings);
  expect_near_rel(total_params(m), 1.03e12, 0.03);  // "~1T"
  expect_near_rel(active_params(m), 32e9, 0.03);
  // Native int4: the weights must come to 600+ GB (docs/reference-facts.md#model-shapes).
  const double bytes = weight_bytes(m, m.quant("int4"));
  EXPECT_GT(bytes, 600e9);
  EXPECT_LT(bytes, 650e9);
}

// --- KV cache, FLOPs, bytes ----------------------------------------------------

TEST(CatalogKv, GqaStoresKAndVPerKvHead) {
  // 80 layers x (K and V) x 8 KV heads x 128 x 2 bytes = 327,680 bytes per token.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(cat().model("llama-3.3-70b")), 80.0 * 2 * 8 * 128 * 2);
  EXPECT_DOUBLE_EQ(layer_cost(cat().model("llama-3.3-70b"), 0).kv_bytes_per_token, 2.0 * 8 * 128 * 2);
}

TEST(CatalogKv, MlaStoresTheCompressedLatent) {
  // 61 layers x (kv_lora 512 + rope 64) x 2 bytes = 70,272 bytes per token.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(cat().model("deepseek-v3.1")), 61.0 * (512 + 64) * 2);
}

TEST(CatalogFlops, LayerFlopsAreTwicePerActiveMatmulWeight) {
  const ModelCard& llama = cat().model("llama-3.3-70b");
  const LayerCost c = layer_cost(llama, 5);
  const double matmul = gqa_attention(8192, 64, 8, 128) + 3 * 8192.0 * 28672;
  EXPECT_DOUBLE_EQ(c.flops_per_token, 2 * matmul);
  EXPECT_DOUBLE_EQ(c.attention_flops_per_token_per_context, 4.0 * 64 * 128);

  const ModelCard& ds = cat().model("deepseek-v3.1");
  const LayerCost d = layer_cost(ds, 10);
  const double active_matmul = deepseek_attention(128) + 9 * 3 * 7168.0 * 2048 + 7168.0 * 256;
  EXPECT_DOUBLE_EQ(d.flops_per_token, 2 * active_matmul);
  // Scores over nope+rope (192) and values over v (128), 2 FLOPs per MAC.
  EXPECT_DOUBLE_EQ(d.attention_flops_per_token_per_context, 128.0 * (2 * 192 + 2 * 128));
}

TEST(CatalogBytes, WeightBytesPerQuantization) {
  const ModelCard& m = cat().model("llama-3.3-70b");
  const double n = total_params(m);
  EXPECT_DOUBLE_EQ(weight_bytes(m, m.quant("bf16")), n * 2);
  EXPECT_DOUBLE_EQ(weight_bytes(m, m.quant("8bit")), n * 8.5 / 8);  // 8 bits + 32 per 64
  EXPECT_DOUBLE_EQ(weight_bytes(m, m.quant("4bit")), n * 4.5 / 8);
  // The published GGUF is 376.65 GiB.
  const ModelCard& r1 = cat().model("deepseek-r1-671b");
  expect_near_rel(weight_bytes(r1, r1.quant("q4_k_m")), 376.65 * 1024 * 1024 * 1024, 0.005);
}

TEST(CatalogBytes, DecodeReadsActiveWeightsLmHeadOneEmbeddingRowAndKv) {
  const ModelCard& m = cat().model("llama-3.1-8b");
  const double layers = 32 * (gqa_attention(4096, 32, 8, 128) + 3 * 4096.0 * 14336 + 2 * 4096.0);
  const double weights = layers + 128256.0 * 4096 + 4096;  // + LM head + one embedding row
  const double kv = 32.0 * 2 * 8 * 128 * 2;
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(m, m.quant("fp16"), 0), weights * 2);
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(m, m.quant("fp16"), 1000), weights * 2 + 1000 * kv);
}

// --- Cards ---------------------------------------------------------------------

TEST(CatalogCards, EveryModelHasItsQuantizations) {
  const std::map<std::string, std::vector<std::string>> expected = {
      {"qwen3-235b-a22b", {"bf16", "8bit", "4bit", "q4_k_m"}},
      {"deepseek-v3.1", {"bf16", "8bit", "4bit", "q4_k_m", "fp8"}},
      {"deepseek-r1-671b", {"bf16", "8bit", "4bit", "q4_k_m"}},
      {"kimi-k2-thinking", {"int4"}},
      {"kimi-k2.6", {"mlx-mixed-3.578bpw", "mlx-mixed-3.331bpw"}},
      {"llama-3.3-70b", {"bf16", "8bit", "4bit", "q4_k_m"}},
      {"llama-3.1-405b", {"bf16", "8bit", "4bit", "q4_k_m"}},
      {"llama-3.1-8b", {"bf16", "fp16", "8bit", "4bit", "q4_k_m"}},
      {"llama-3.2-3b", {"bf16", "fp16", "8bit", "4bit", "q4_k_m"}},
      {"llama-7b", {"fp16", "q8_0", "q4_0", "8bit", "4bit", "q4_k_m"}},
  };
  const std::map<std::string, double> bits = {{"bf16", 16},  {"fp16", 16},     {"8bit", 8.5},
                                              {"4bit", 4.5}, {"q4_k_m", 4.82}, {"mlx-mixed-3.578bpw", 3.578},
                                              {"q8_0", 8.5}, {"q4_0", 4.5}};
  for (const auto& [name, quants] : expected) {
    const ModelCard& m = cat().model(name);
    for (const std::string& q : quants) {
      ASSERT_NO_THROW(m.quant(q)) << name << " " << q;
      if (bits.count(q)) {
        EXPECT_DOUBLE_EQ(m.quant(q).bits_per_weight, bits.at(q)) << name << " " << q;
      }
    }
  }
  EXPECT_EQ(cat().model_names().size(), expected.size());
  EXPECT_THROW(cat().model("llama-3.3-70b").quant("fp8"), std::out_of_range);
}

TEST(CatalogCards, HardwareCardsLoadInSiUnits) {
  for (const char* name :
       {"m3-ultra-96gb", "m3-ultra-256gb", "m3-ultra-512gb", "m4-max-128gb", "m2-ultra-192gb", "dgx-spark"}) {
    const HardwareCard& h = cat().hardware(name);
    EXPECT_GT(h.memory_bytes, 0) << name;
    EXPECT_GT(h.usable_memory_fraction, 0) << name;
    EXPECT_LE(h.usable_memory_fraction, 1) << name;
    EXPECT_GT(h.memory_bandwidth, 0) << name;
    EXPECT_GT(h.peak_flops, 0) << name;
    EXPECT_FALSE(h.ports.empty()) << name;
    EXPECT_GT(h.ssd_read_bandwidth, 0) << name;
    EXPECT_GT(h.idle_watts, 0) << name;
    EXPECT_GE(h.loaded_watts, h.idle_watts) << name;
    EXPECT_GT(h.price_usd, 0) << name;
    EXPECT_GT(h.boot_s, 0) << name;
  }
  const HardwareCard& ultra = cat().hardware("m3-ultra-512gb");
  EXPECT_DOUBLE_EQ(ultra.memory_bandwidth, 819e9);
  EXPECT_DOUBLE_EQ(ultra.price_usd, 11699);
  EXPECT_EQ(ultra.ports.at("thunderbolt"), 5);
  EXPECT_NEAR(ultra.memory_bytes, 512.0 * 1024 * 1024 * 1024, 0.01e9);  // 512 GiB
  EXPECT_DOUBLE_EQ(cat().hardware("m3-ultra-256gb").price_usd, 8099);
  EXPECT_EQ(cat().hardware("dgx-spark").ports.at("qsfp"), 2);
  EXPECT_EQ(cat().hardware_names().size(), 6u);
}

TEST(CatalogCards, LinkCardsLoadInSiUnits) {
  for (const char* name : {"tb5-rdma", "tb5-tcp", "10gbe", "2.5gbe", "qsfp200-roce"}) {
    const LinkCard& l = cat().link(name);
    EXPECT_GT(l.bandwidth, 0) << name;
    EXPECT_GT(l.latency_s, 0) << name;
    EXPECT_GE(l.per_message_overhead_s, 0) << name;
    EXPECT_GT(l.frame_bytes, 0) << name;
    EXPECT_FALSE(l.port_kind.empty()) << name;
  }
  const LinkCard& rdma = cat().link("tb5-rdma");
  EXPECT_DOUBLE_EQ(rdma.bandwidth, 55e9 / 8);  // 50-60 Gb/s effective
  EXPECT_LT(rdma.latency_s, 10e-6);            // single-digit us
  EXPECT_DOUBLE_EQ(rdma.frame_bytes, 4096);
  EXPECT_FALSE(rdma.switched);
  EXPECT_TRUE(cat().link("10gbe").switched);
  EXPECT_EQ(cat().link("qsfp200-roce").port_kind, "qsfp");
  EXPECT_EQ(cat().link_names().size(), 5u);
}

// The card holds the Mac-to-Mac UC verbs figures (docs/reference-facts.md#mac-to-mac-link-figures): a 64 B
// message's one-way 4.15 us is its latency; 4 KiB takes 4.6 us, and so does anything smaller (padded to a 4 KiB
// frame); 64 KiB crosses at 69-75 Gbit/s on top of the latency.
TEST(CatalogCards, Tb5RdmaTimesMessagesAsThePublishedUcVerbsFigures) {
  const LinkCard& rdma = cat().link("tb5-rdma");
  const auto wire_s = [&](double bytes) { return engine::timed_bytes(rdma, bytes) / rdma.bandwidth; };
  EXPECT_NEAR(rdma.latency_s, 4.15e-6, 1e-12);
  EXPECT_NEAR(rdma.latency_s + wire_s(4096), 4.6e-6, 1e-9);
  EXPECT_NEAR(rdma.latency_s + wire_s(64), 4.6e-6, 1e-9);
  const double gbps_64k = 65536 * 8 / wire_s(65536) / 1e9;
  EXPECT_GE(gbps_64k, 69);
  EXPECT_LE(gbps_64k, 75);
  // Beyond the table, the card's bulk rate: no published device figure above 64 KiB.
  EXPECT_NEAR(wire_s(2 << 20) - wire_s(1 << 20), (1 << 20) / rdma.bandwidth, 1e-12);
}

TEST(CatalogCards, UnknownNamesListTheKnownOnes) {
  try {
    cat().model("gpt-5");
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("llama-3.3-70b"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cat().hardware("m5-ultra"), std::out_of_range);
  EXPECT_THROW(cat().link("tb6"), std::out_of_range);
}

// --- Malformed cards -------------------------------------------------------------

class MalformedCard : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("meshinfer-catalog-" + std::to_string(getpid()) + "-" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "models");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write_model(const std::string& name, const std::string& text) {
    const fs::path file = dir_ / "models" / (name + ".json");
    std::ofstream(file) << text;
    return file.string();
  }

  // Loads the temp catalog and returns the InputError it must raise.
  InputError load_error() {
    try {
      Catalog::load(dir_.string());
    } catch (const InputError& e) {
      return e;
    }
    ADD_FAILURE() << "expected InputError";
    return InputError("", "", "");
  }

  fs::path dir_;
};

const char* const kTinyMoe = R"({
  "source": "test", "layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16,
  "ffn": 128, "vocab": 100,
  "moe": {"experts": EXPERTS, "active_experts": 2, "shared_experts": 0, "expert_ffn": 32, "dense_layers": 0},
  "quantizations": [{"name": "bf16", "bits_per_weight": 16}]
})";

std::string tiny_moe(const std::string& experts) {
  std::string s = kTinyMoe;
  s.replace(s.find("EXPERTS"), 7, experts);
  return s;
}

TEST_F(MalformedCard, ValidTinyCardLoads) {
  write_model("tiny", tiny_moe("4"));
  const Catalog c = Catalog::load(dir_.string());
  // 2 x (GQA + 4 experts + router + norms) + 2 x 100 x 64.
  const double layer = 2 * 64.0 * 4 * 16 + 2 * 64.0 * 2 * 16 + 4 * 3 * 64.0 * 32 + 64.0 * 4 + 2 * 64.0;
  EXPECT_DOUBLE_EQ(total_params(c.model("tiny")), 2 * layer + 2 * 100.0 * 64);
}

TEST_F(MalformedCard, WrongTypeNamesFileAndJsonPath) {
  const std::string file = write_model("bad", tiny_moe("\"many\""));
  const InputError e = load_error();
  EXPECT_EQ(e.file(), file);
  EXPECT_EQ(e.json_path(), "/moe/experts");
  EXPECT_NE(e.reason().find("integer"), std::string::npos) << e.reason();
  EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
}

TEST_F(MalformedCard, BadValueNamesTheField) {
  write_model("bad", tiny_moe("1"));  // fewer experts than active_experts
  const InputError e = load_error();
  EXPECT_EQ(e.json_path(), "/moe/active_experts");
}

TEST_F(MalformedCard, MissingFieldAndUnknownField) {
  write_model("bad", R"({"source": "test", "layers": 2})");
  EXPECT_EQ(load_error().json_path(), "/hidden");
  std::string typo = tiny_moe("4");
  typo.replace(typo.find("\"ffn\""), 5, "\"fnn\"");
  write_model("bad", typo);
  EXPECT_EQ(load_error().json_path(), "/fnn");
}

TEST_F(MalformedCard, InvalidJsonNamesTheFile) {
  const std::string file = write_model("broken", "{\"layers\": ");
  const InputError e = load_error();
  EXPECT_EQ(e.file(), file);
  EXPECT_NE(e.reason().find("malformed JSON"), std::string::npos) << e.reason();
}

TEST_F(MalformedCard, QuantizationEntriesHaveIndexedPaths) {
  std::string s = tiny_moe("4");
  s.replace(s.find("16}]"), 4, "16}, {\"name\": \"4bit\", \"bits_per_weight\": -1}]");
  write_model("bad", s);
  EXPECT_EQ(load_error().json_path(), "/quantizations/1/bits_per_weight");
}

// A mixed quant puts the routed experts at what its dense width leaves of the average:
// too wide a dense width leaves them nothing, and a dense model has no experts to take the rest.
TEST_F(MalformedCard, MixedQuantNeedsRoutedExpertsToHoldTheRestOfTheAverage) {
  std::string s = tiny_moe("4");
  s.replace(s.find("16}]"), 4, "16}, {\"name\": \"mixed\", \"bits_per_weight\": 4, \"dense_bits_per_weight\": 32}]");
  write_model("bad", s);
  const InputError e = load_error();
  EXPECT_EQ(e.json_path(), "/quantizations/1/dense_bits_per_weight");
  EXPECT_NE(e.reason().find("routed experts"), std::string::npos) << e.reason();
}

}  // namespace
}  // namespace engine

// The planner splits layers by these parts: they must add up to the whole layer.
TEST(LayerParts, AddUpToTheLayerForEveryModel) {
  const auto& catalog = engine::Catalog::builtin();
  for (const auto& name : catalog.model_names()) {
    const auto& m = catalog.model(name);
    for (int layer : {0, m.layers - 1}) {
      const auto parts = engine::layer_parts(m, layer);
      EXPECT_NEAR(parts.total(), engine::layer_cost(m, layer).params, 1.0) << name << " layer " << layer;
    }
  }
}
