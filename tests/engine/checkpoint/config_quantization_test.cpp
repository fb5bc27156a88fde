// What a config.json records about its weights' bytes (MLX blocks, fp8,
// compressed-tensors, dtypes), and every refusal naming the file, the JSON
// path and the reason: the publishers' configs of tests/data/configs, edited.
#include "engine/checkpoint/config_quantization.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"
#include "engine/cards/model_math.hpp"
#include "engine/checkpoint/config_card.hpp"
#include "engine/checkpoint/model_config.hpp"

namespace engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json publisher(const std::string& name) {
  return load_json(MESHINFER_SOURCE_DIR "/tests/data/configs/" + name + "/config.json");
}

// `config` written as NAME/config.json in a fresh directory; its card.
class ConfigQuantization : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("config_quantization_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "m");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const json& config) {
    const std::string file = (dir_ / "m" / "config.json").string();
    std::ofstream(file) << config.dump(2);
    return file;
  }
  ModelCard card(const json& config) { return config_card(write(config)); }
  InputError refusal(const json& config) {
    const std::string file = write(config);
    try {
      config_card(file);
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), file);
      return e;
    }
    ADD_FAILURE() << "accepted";
    return InputError("", "", "");
  }
  fs::path dir_;
};

// As mlx-lm's save_config writes it: the block and its copy.
json mlx(json config, int bits, int group) {
  config["quantization"] = {{"group_size", group}, {"bits", bits}, {"mode", "affine"}};
  config["quantization_config"] = config["quantization"];
  return config;
}

TEST_F(ConfigQuantization, MlxBitsCountAScaleAndABiasPerGroup) {
  const ModelCard eight = card(mlx(publisher("qwen3-235b-a22b"), 8, 64));
  EXPECT_EQ(eight.quantizations.at(0).name, "mlx-8bit");
  // The catalog's "8bit" and "4bit": MLX affine, bf16 scale and bias per 64.
  EXPECT_DOUBLE_EQ(eight.quantizations.at(0).bits_per_weight,
                   Catalog::builtin().model("qwen3-235b-a22b").quant("8bit").bits_per_weight);
  EXPECT_DOUBLE_EQ(card(mlx(publisher("llama-3.3-70b"), 4, 64)).quantizations.at(0).bits_per_weight, 4.5);
  EXPECT_DOUBLE_EQ(card(mlx(publisher("llama-3.1-8b"), 4, 32)).quantizations.at(0).bits_per_weight, 5);
  // DeepSeek's MLX conversions drop the fp8 block for the MLX one.
  json ds = publisher("deepseek-v3.1");
  ds.erase("quantization_config");
  EXPECT_DOUBLE_EQ(card(mlx(ds, 4, 64)).quantizations.at(0).bits_per_weight, 4.5);
}

TEST_F(ConfigQuantization, PerModuleEntriesWeighByTheirModulesSize) {
  // mlx-lm since cbfba0a9: Qwen3-MoE routers at 8 bits in a 4-bit model
  // (docs/checkpoint-formats.md#which-modules-mlx-quantizes).
  json config = mlx(publisher("qwen3-235b-a22b"), 4, 64);
  for (int layer = 0; layer < 94; ++layer)
    config["quantization"][fmt::format("model.layers.{}.mlp.gate", layer)] = {{"group_size", 64}, {"bits", 8}};
  config["quantization"]["lm_head"] = false;  // left in bf16
  const ModelCard c = card(config);
  const double total = total_params(c), router = 128.0 * 4096, head = 151936.0 * 4096;
  EXPECT_NEAR(c.quantizations.at(0).bits_per_weight, 4.5 + (94 * router * 4 + head * 11.5) / total, 1e-12);
}

TEST_F(ConfigQuantization, AModuleTheModelLacksIsRefusedByItsPath) {
  json config = mlx(publisher("qwen3-235b-a22b"), 4, 64);
  config["quantization"]["model.layers.94.mlp.gate"] = {{"bits", 8}};
  const InputError e = refusal(config);
  EXPECT_EQ(e.json_path(), "/quantization/model.layers.94.mlp.gate");
  EXPECT_NE(e.reason().find("not a module of this 94-layer model"), std::string::npos) << e.what();
}

TEST_F(ConfigQuantization, DtypeIsReadFromEitherKeyAndNeededUnquantized) {
  json config = publisher("llama-3.1-8b");
  config.erase("torch_dtype");
  config["dtype"] = "float16";  // transformers v5
  EXPECT_EQ(card(config).quantizations.at(0).name, "f16");
  config["dtype"] = "float32";
  EXPECT_DOUBLE_EQ(card(config).quantizations.at(0).bits_per_weight, 32);
  config["dtype"] = "float8";
  EXPECT_EQ(refusal(config).json_path(), "/dtype");
  config.erase("dtype");
  const InputError e = refusal(config);
  EXPECT_EQ(e.json_path(), "/torch_dtype");
  EXPECT_NE(e.reason().find("to plan their bytes"), std::string::npos) << e.what();
}

TEST_F(ConfigQuantization, Fp8NeedsItsBlockSize) {
  json config = publisher("deepseek-v3.1");
  config["quantization_config"].erase("weight_block_size");
  EXPECT_EQ(refusal(config).json_path(), "/quantization_config/weight_block_size");
  config["quantization_config"]["weight_block_size"] = {128};
  EXPECT_NE(refusal(config).reason().find("[rows, columns]"), std::string::npos);
  config["quantization_config"]["quant_method"] = "gptq";
  const InputError e = refusal(config);
  EXPECT_EQ(e.json_path(), "/quantization_config/quant_method");
  EXPECT_NE(e.reason().find("unknown quantization method 'gptq'"), std::string::npos) << e.what();
}

TEST_F(ConfigQuantization, CompressedTensorsFollowsItsIgnoreList) {
  json config = publisher("kimi-k2-thinking");
  json& q = config["quantization_config"];
  q["ignore"] = json::array({"lm_head"});  // attention, shared experts and the dense layer quantized too
  const ModelCard all = card(config);
  EXPECT_EQ(all.quantizations.at(0).dense_bits_per_weight, 0);
  const double lm_head = 163840.0 * 7168, embedding = lm_head;
  double router_and_norms = 0;
  for (int layer = 1; layer < 61; ++layer) router_and_norms += 7168.0 * 384;
  router_and_norms += 61 * norm_params(all);
  const double total = total_params(all), rest = lm_head + embedding + router_and_norms;
  EXPECT_DOUBLE_EQ(all.quantizations.at(0).bits_per_weight, ((total - rest) * 4.5 + rest * 16) / total);
  q["config_groups"]["group_0"]["weights"]["symmetric"] = false;
  EXPECT_EQ(refusal(config).json_path(), "/quantization_config/config_groups/group_0/weights/symmetric");
  q["config_groups"]["group_0"]["weights"]["symmetric"] = true;
  q["ignore"] = json::array({"re:(unclosed"});
  EXPECT_EQ(refusal(config).json_path(), "/quantization_config/ignore/0");
  q["format"] = "float-quantized";
  EXPECT_EQ(refusal(config).json_path(), "/quantization_config/format");
}

TEST_F(ConfigQuantization, UnknownModelTypeSuggestsTheNearestPlannedOne) {
  json config = publisher("qwen3-235b-a22b");
  config["model_type"] = "qwen3-moe";
  const InputError e = refusal(config);
  EXPECT_EQ(e.json_path(), "/model_type");
  EXPECT_NE(e.reason().find("did you mean 'qwen3_moe'?"), std::string::npos) << e.what();
  EXPECT_NE(e.reason().find("deepseek_v3"), std::string::npos) << e.what();
}

TEST_F(ConfigQuantization, MlaShapeKeysAreRequiredAndCheckedByPath) {
  json config = publisher("deepseek-v3.1");
  config.erase("kv_lora_rank");
  EXPECT_EQ(refusal(config).json_path(), "/kv_lora_rank");
  config = publisher("deepseek-v3.1");
  config["first_k_dense_replace"] = 62;
  EXPECT_EQ(refusal(config).json_path(), "/first_k_dense_replace");
  config = publisher("deepseek-v3.1");
  config["moe_layer_freq"] = 2;
  EXPECT_EQ(refusal(config).json_path(), "/moe_layer_freq");
  config = publisher("deepseek-v3.1");
  config["q_lora_rank"] = nullptr;  // DeepSeek-V2-Lite's: queries straight from hidden
  EXPECT_EQ(card(config).mla->q_lora_rank, 0);
}

TEST_F(ConfigQuantization, CpuBackendRefusesMlaAsPlanningOnly) {
  for (const char* model : {"deepseek-v3.1", "kimi-k2-thinking"}) {
    try {
      parse_model_config(publisher(model), "config.json");
      ADD_FAILURE() << model << " accepted for compute";
    } catch (const InputError& e) {
      EXPECT_EQ(e.json_path(), "/model_type");
      EXPECT_NE(e.reason().find("is for planning only: CpuBackend does not compute it"), std::string::npos) << e.what();
    }
  }
}

TEST_F(ConfigQuantization, AMissingConfigIsRefusedByItsFile) {
  fs::create_directories(dir_ / "empty");
  try {
    config_card((dir_ / "empty").string());
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), (dir_ / "empty" / "config.json").string());
    EXPECT_NE(e.reason().find("cannot open"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace engine
