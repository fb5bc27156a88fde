// A scenario's model path: a config.json alone is planned from its card (no
// weights, any planned model_type); a directory is computed from its weights,
// which MLA models never are.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "engine/base/error.hpp"
#include "engine/input/scenario.hpp"
#include "engine/input/scenario_file.hpp"

namespace engine {
namespace {

const std::string kConfigs = MESHINFER_SOURCE_DIR "/tests/data/configs/";

Scenario with_model_path(const std::string& path) {
  nlohmann::json s = {
      {"cluster",
       {{"nodes", {{{"name", "a"}, {"hardware", "m3-ultra-512gb"}}, {{"name", "b"}, {"hardware", "m3-ultra-512gb"}}}},
        {"fabric", {{"type", "full-mesh"}, {"link", "tb5-rdma"}}}}},
      {"model", {{"path", path}}},
      {"parallelism", "pipeline"}};
  return parse_scenario(s.dump(), "/tmp/scenario.json", Catalog::builtin());
}

TEST(ScenarioModelPath, AConfigAloneIsSimulatedFromItsCard) {
  const Scenario s = with_model_path(kConfigs + "deepseek-v3.1/config.json");
  EXPECT_EQ(s.model, "deepseek-v3.1");
  EXPECT_EQ(s.quant, "fp8");         // the config's own, by default
  EXPECT_TRUE(s.model_dir.empty());  // nothing to compute
  ASSERT_TRUE(s.model_card && s.model_card->mla);
  EXPECT_EQ(catalog_for(s, Catalog::builtin()).model("deepseek-v3.1").quantizations.size(), 1u);
}

TEST(ScenarioModelPath, AnMlaDirectoryIsRefusedForComputeNamingItsConfig) {
  try {
    with_model_path(kConfigs + "kimi-k2-thinking");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), kConfigs + "kimi-k2-thinking/config.json");
    EXPECT_EQ(e.json_path(), "/model_type");
    EXPECT_NE(e.reason().find("planning only"), std::string::npos) << e.what();
  }
}

TEST(ScenarioModelPath, NeitherFileNorDirectoryIsRefusedAtThePath) {
  try {
    with_model_path(kConfigs + "nowhere.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "/model/path");
    EXPECT_NE(e.reason().find("is not a directory"), std::string::npos) << e.what();
  }
}

TEST(ScenarioModelPath, TooBigForTheClusterIsRefusedWithTheShortfall) {
  try {
    with_model_path(kConfigs + "llama-3.1-405b/config.json");  // 810 GB of bf16 in 2 x 495 GB: fits
  } catch (const InputError& e) {
    ADD_FAILURE() << e.what();
  }
  try {
    with_model_path(kConfigs + "kimi-k2-thinking/config.json");  // ~594 GB in 990 GB: fits too
  } catch (const InputError& e) {
    ADD_FAILURE() << e.what();
  }
}

}  // namespace
}  // namespace engine
