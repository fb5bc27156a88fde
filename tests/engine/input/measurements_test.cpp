// Measurements file parsing, the scenario each row becomes, and profile files
// the fit reads and rewrites.
#include "engine/input/measurements.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/base/error.hpp"

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

constexpr const char* kMeasurements = R"({
  "cluster": {"nodes": ["m3-ultra-512gb", "m3-ultra-512gb", "m3-ultra-256gb", "m3-ultra-256gb"]},
  "decode": [{"model": "qwen3-235b-a22b", "quant": "q4_k_m?", "system": "llamacpp-rpc-tcp", "nodes": 4, "tokens_per_s": 15.2, "source": "a"},
             {"model": "kimi-k2.6", "quant": "mlx-mixed-3.331bpw", "system": "mlx-lm-local", "nodes": 1, "prompt_tokens": 1024, "tokens_per_s": 21.4, "source": "c"}],
  "prefill": [{"model": "llama-3.1-8b", "quant": "fp16", "system": "exo-mlx", "nodes": 1, "prompt_tokens": 8192, "seconds": 5.57, "source": "b"}]
})";

TEST(CalibrationRows, UncertainQuantIsSimulatedAsNamedAndDurationsBecomeRates) {
  const auto m = engine::load_measurements(write_temp("calibration_rows.json", kMeasurements));
  ASSERT_EQ(m.rows.size(), 3u);
  EXPECT_EQ(m.rows[0].quant, "q4_k_m");
  EXPECT_TRUE(m.rows[0].quant_uncertain);
  EXPECT_EQ(m.rows[0].stack, "llamacpp-rpc-tcp");
  EXPECT_EQ(m.rows[0].source, "a");
  EXPECT_TRUE(m.rows[2].prefill);
  EXPECT_EQ(m.rows[2].stack, "exo-tensor-rdma");
  EXPECT_NEAR(m.rows[2].published, 8192 / 5.57, 1e-9);
}

// mlx_lm.benchmark decodes after a long prompt: the row's scenario does too, on the MLX profile.
TEST(CalibrationRows, DecodeRowWithAPromptDecodesAfterItOnTheMlxProfile) {
  const auto m = engine::load_measurements(write_temp("calibration_rows.json", kMeasurements));
  EXPECT_EQ(m.rows[0].prompt_tokens, engine::kDecodePromptTokens);
  const auto& kimi = m.rows[1];
  EXPECT_FALSE(kimi.prefill);
  EXPECT_EQ(kimi.stack, "exo-tensor-rdma");
  EXPECT_EQ(kimi.label(), "kimi-k2.6 mlx-mixed-3.331bpw decode after 1024 x1 (mlx-lm-local)");
  const auto s = engine::row_scenario(kimi, m.cluster);
  EXPECT_EQ(s.workload.prompt_tokens.value, 1024);
  EXPECT_EQ(s.workload.output_tokens.value, engine::kDecodeOutputTokens);
}

// Rows of a shape_only group (older builds, say) count only in their ratios to one another: a speed
// common to the group is no error, what differs from row to row is.
TEST(CalibrationRows, AShapeOnlyGroupIsComparedAfterItsCommonFactor) {
  const auto m = engine::load_measurements(write_temp("calibration_shape.json", R"({
    "cluster": {"nodes": ["m3-ultra-512gb"]},
    "decode": [{"model": "llama-7b", "quant": "fp16", "system": "llamacpp-local", "nodes": 1, "tokens_per_s": 40, "source": "a", "shape_only": "old"},
               {"model": "llama-7b", "quant": "q4_0", "system": "llamacpp-local", "nodes": 1, "hardware": "m2-ultra-192gb", "tokens_per_s": 90, "source": "a", "shape_only": "old"},
               {"model": "llama-3.2-3b", "quant": "q4_k_m", "system": "llamacpp-local", "nodes": 1, "tokens_per_s": 170, "source": "b"}],
    "prefill": []
  })"));
  ASSERT_EQ(m.rows.size(), 3u);
  EXPECT_EQ(m.rows[0].shape_only, "old");
  EXPECT_EQ(m.rows[2].shape_only, "");
  EXPECT_EQ(engine::measurement_json(m.rows[1])["shape_only"], "old");
  // The group simulated 20% faster than published, row for row: no error; the other row keeps its own.
  const auto none = engine::row_errors({48, 108, 187}, m.rows);
  EXPECT_NEAR(none[0], 0, 1e-12);
  EXPECT_NEAR(none[1], 0, 1e-12);
  EXPECT_NEAR(none[2], 0.1, 1e-12);
  EXPECT_NEAR(engine::shape_factors({48, 108, 187}, m.rows)[0], 1.2, 1e-12);
  EXPECT_EQ(engine::shape_factors({48, 108, 187}, m.rows)[2], 1.0);
  // One row 21% faster and the other 1% slower: the common factor is their geometric mean (about 1.09),
  // and what is left is about +10% and -10%.
  const auto apart = engine::row_errors({40 * 1.21, 90 * 0.99, 170}, m.rows);
  EXPECT_NEAR(engine::shape_factors({40 * 1.21, 90 * 0.99, 170}, m.rows)[1], std::sqrt(1.21 * 0.99), 1e-12);
  EXPECT_NEAR(apart[0], 1.21 / std::sqrt(1.21 * 0.99) - 1, 1e-12);
  EXPECT_GT(apart[0], 0.1);
  EXPECT_LT(apart[1], -0.09);
  EXPECT_NEAR(engine::squared_error({48, 108, 187}, m.rows), 0.01, 1e-12);
}

// The JSON path load_measurements names when it refuses `text` (written to
// `name`); "accepted" when it does not refuse it.
std::string refused_at(const std::string& name, const std::string& text) {
  try {
    engine::load_measurements(write_temp(name, text));
  } catch (const engine::InputError& e) {
    return e.json_path();
  }
  return "accepted";
}

TEST(CalibrationRows, RowWithoutASourceIsRefusedWithItsPath) {
  EXPECT_EQ(refused_at("calibration_nosource.json", R"({"cluster": {"nodes": ["m3-ultra-512gb"]}, "prefill": [],
    "decode": [{"model": "x", "quant": "8bit", "system": "exo-mlx", "nodes": 1, "tokens_per_s": 1}]})"),
            "/decode/0/source");
}

TEST(CalibrationRows, ScenarioRunsOnTheFirstNodesOverTheStacksLinkAndPlan) {
  const auto m = engine::load_measurements(write_temp("calibration_rows.json", kMeasurements));
  const auto s = engine::row_scenario(m.rows[0], m.cluster);
  ASSERT_EQ(s.nodes.size(), 4u);
  EXPECT_EQ(s.nodes[2].hardware, "m3-ultra-256gb");
  EXPECT_EQ(s.fabric.link, "tb5-tcp");
  EXPECT_EQ(s.fabric.cables.size(), 6u);
  EXPECT_EQ(s.parallelism, engine::Strategy::kPipeline);
  EXPECT_EQ(s.workload.output_tokens.value, engine::kDecodeOutputTokens);
  const auto p = engine::row_scenario(m.rows[2], m.cluster);
  EXPECT_EQ(p.fabric.link, "tb5-rdma");
  EXPECT_EQ(p.parallelism, engine::Strategy::kTensor);
  EXPECT_EQ(p.workload.prompt_tokens.value, 8192);
  EXPECT_EQ(p.workload.output_tokens.value, 1);
}

TEST(CalibrationRows, UnknownSystemIsRefusedWithItsPath) {
  EXPECT_EQ(refused_at("calibration_bad.json", R"({"cluster": {"nodes": ["m3-ultra-512gb"]}, "prefill": [],
    "decode": [{"model": "x", "quant": "8bit", "system": "vllm", "nodes": 1, "tokens_per_s": 1}]})"),
            "/decode/0/system");
}

TEST(CalibrationProfiles, RewriteKeepsUnitsAndBoundsAndReadsBack) {
  const auto file = write_temp("profile_in.json", R"({
  "name": "p",
  "memory_bandwidth_efficiency": {"value": 0.5, "unit": "fraction", "fit": [0.3, 0.95]},
  "per_kernel_overhead_us": {"value": 10, "unit": "us"}
})");
  const auto bounds = engine::fit_parameters(file);
  ASSERT_EQ(bounds.size(), 1u);
  EXPECT_EQ(bounds[0].key, "memory_bandwidth_efficiency");
  EXPECT_EQ(bounds[0].upper, 0.95);
  engine::StackProfile p;
  p.memory_bandwidth_efficiency = 0.81234567;
  p.per_kernel_overhead_s = 12e-6;
  const auto out = (std::filesystem::temp_directory_path() / "profile_out.json").string();
  engine::write_profile(file, out, p);
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(R"("memory_bandwidth_efficiency": {"value":0.8123,"unit":"fraction","fit":[0.3,0.95]})"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"("per_kernel_overhead_us": {"value":12.0,"unit":"us"})"), std::string::npos) << text;
  EXPECT_EQ(engine::fit_parameters(out).size(), 1u);
}

}  // namespace
