// Benchmark output from a team's own machines as calibration rows.
//
// Fixtures (tests/engine/fixtures/):
// - llama-bench-m3-ultra.json: the shape of `llama-bench -o json` (llama.cpp's
//   tools/llama-bench/llama-bench.cpp, json_printer: one object per test with the
//   fields of test::get_fields, as of build 7315), written by hand with the published
//   pp512 and tg128 figures (docs/reference-facts.md#published-measurements) for
//   Llama 3.2 3B Q4_K_M on one M3 Ultra; the tg128 test at
//   depth 4096 (`-d 4096`) is made up to exercise n_depth.
// - mlx-lm-benchmark.txt: what `mlx_lm.benchmark -p 1024 -g 512 -n 5` prints (mlx-lm's
//   mlx_lm/benchmark.py: "Timing with ...", one "Trial" line per trial, "Averages"),
//   written by hand with the Kimi K2.6 averages docs/reference-facts.md#published-measurements
//   cites; not captured from a run.
#include "engine/input/bench_import.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/base/error.hpp"

namespace {

const std::string kFixtures = MESHINFER_SOURCE_DIR "/tests/engine/fixtures/";

engine::BenchImport setup(const std::string& model, const std::string& quant) {
  return {model, quant, "m3-ultra-512gb"};
}

TEST(BenchImport, LlamaBenchTestsBecomePrefillAndDecodeRowsOnTheirHardware) {
  const auto rows = engine::import_benchmark(kFixtures + "llama-bench-m3-ultra.json", setup("llama-3.2-3b", ""));
  ASSERT_EQ(rows.size(), 3u);
  // pp512: a prefill of 512 tokens.
  EXPECT_TRUE(rows[0].prefill);
  EXPECT_EQ(rows[0].prompt_tokens, 512);
  EXPECT_DOUBLE_EQ(rows[0].published, 3500.01);
  // tg128: batch-1 decode after the default short prompt; at depth 4096, after 4,096 cached tokens.
  EXPECT_FALSE(rows[1].prefill);
  EXPECT_EQ(rows[1].prompt_tokens, engine::kDecodePromptTokens);
  EXPECT_DOUBLE_EQ(rows[1].published, 171.16);
  EXPECT_EQ(rows[2].prompt_tokens, 4096);
  for (const auto& r : rows) {
    EXPECT_EQ(r.quant, "q4_k_m");  // from "llama 3B Q4_K - Medium"
    EXPECT_EQ(r.system, "llamacpp-local");
    EXPECT_EQ(r.stack, "llamacpp-rpc-tcp");
    EXPECT_EQ(r.hardware, "m3-ultra-512gb");
    EXPECT_EQ(r.nodes, 1);
    EXPECT_NE(r.source.find("llama-bench build 7315"), std::string::npos) << r.source;
    EXPECT_NE(r.source.find("Apple M3 Ultra"), std::string::npos) << r.source;
  }
  // The row reads back from a measurements file as it was imported.
  const auto j = engine::measurement_json(rows[2]);
  EXPECT_EQ(j["prompt_tokens"], 4096);
  EXPECT_EQ(j["hardware"], "m3-ultra-512gb");
}

TEST(BenchImport, MlxBenchmarkAveragesBecomeAPrefillAndADecodeRowAtItsPromptLength) {
  const auto rows =
      engine::import_benchmark(kFixtures + "mlx-lm-benchmark.txt", setup("kimi-k2.6", "mlx-mixed-3.578bpw"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].prefill);
  EXPECT_EQ(rows[0].prompt_tokens, 1024);
  EXPECT_DOUBLE_EQ(rows[0].published, 221.7);
  EXPECT_FALSE(rows[1].prefill);
  EXPECT_EQ(rows[1].prompt_tokens, 1024);  // generation after the 1,024-token prompt
  EXPECT_DOUBLE_EQ(rows[1].published, 21.095);
  EXPECT_EQ(rows[1].system, "mlx-lm-local");
  EXPECT_EQ(rows[1].stack, "exo-tensor-rdma");
}

TEST(BenchImport, LlamaBenchWordsForQuantizationsMapToCatalogNames) {
  EXPECT_EQ(engine::llama_bench_quant("qwen3moe 235B.A22B Q4_K - Medium"), "q4_k_m");
  EXPECT_EQ(engine::llama_bench_quant("llama 8B BF16"), "bf16");
  EXPECT_EQ(engine::llama_bench_quant("llama 8B F16"), "fp16");
  EXPECT_EQ(engine::llama_bench_quant("llama 8B IQ2_XXS - 2.0625 bpw"), "");
}

// Refusals name the file and what is wrong.
std::string refusal(const std::string& text, const engine::BenchImport& s) {
  const auto file = (std::filesystem::temp_directory_path() / "meshinfer-bench-import.txt").string();
  std::ofstream(file) << text;
  try {
    engine::import_benchmark(file, s);
  } catch (const engine::InputError& e) {
    EXPECT_EQ(e.file(), file);
    return e.json_path() + ": " + e.reason();
  }
  ADD_FAILURE() << "expected InputError for: " << text;
  return "";
}

TEST(BenchImport, OutputItCannotReadIsRefusedWithTheReason) {
  EXPECT_NE(refusal("Averages: prompt_tps=1.0, generation_tps=2.0", setup("kimi-k2.6", "q")).find("Timing with"),
            std::string::npos);
  EXPECT_NE(refusal("Timing with prompt_tokens=8, generation_tokens=8, batch_size=4.\n"
                    "Averages: prompt_tps=1.0, generation_tps=2.0",
                    setup("kimi-k2.6", "q"))
                .find("batch_size 4"),
            std::string::npos);
  EXPECT_NE(refusal("Timing with prompt_tokens=8, generation_tokens=8, batch_size=1.", setup("kimi-k2.6", ""))
                .find("--quant"),
            std::string::npos);
  // A pp+tg test ("pg") is not a row.
  EXPECT_EQ(refusal(R"([{"n_prompt": 512, "n_gen": 128, "avg_ts": 90, "model_type": "llama 3B Q4_K - Medium"}])",
                    setup("llama-3.2-3b", ""))
                .substr(0, 3),
            "/0:");
  EXPECT_NE(refusal(R"([{"n_prompt": 512, "n_gen": 0, "avg_ts": -1, "model_type": "llama 3B Q4_K - Medium"}])",
                    setup("llama-3.2-3b", ""))
                .find("/0/avg_ts"),
            std::string::npos);
}

}  // namespace
