// Every reader refuses the same mistake in the same words (engine/base/json_input):
// a scenario, a catalog card, calibration measurements, a stack profile and a
// model config, each given a missing key, a wrong type and a misspelt key.
#include "engine/base/json_input.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/cards/catalog.hpp"
#include "engine/cards/stack_profile.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/input/measurements.hpp"
#include "engine/input/scenario.hpp"
#include "engine/input/scenario_file.hpp"

namespace engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A reader under test: it reads `doc` from a file of its own.
using Reader = std::function<void(const json& doc)>;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("meshinfer-json-input-" + std::to_string(::getpid()));
  fs::create_directories(dir / "profiles");
  return dir / name;
}

std::string write(const fs::path& path, const json& doc) {
  std::ofstream(path) << doc.dump(2);
  return path.string();
}

const json kScenario = json::parse(R"({
  "cluster": {"nodes": [{"name": "m1", "hardware": "m3-ultra-512gb"}]},
  "model": {"name": "llama-3.3-70b", "quant": "8bit"}, "description": "one node"})");
const json kLinkCard = json::parse(R"({"bandwidth_gbps": 4, "latency_us": 30, "per_message_overhead_us": 20,
  "frame_bytes": 1500, "port_kind": "thunderbolt"})");
const json kMeasurements = json::parse(R"({"cluster": {"nodes": ["m3-ultra-512gb"]}, "prefill": [],
  "decode": [{"model": "llama-3.3-70b", "quant": "8bit", "system": "exo-mlx", "nodes": 1, "tokens_per_s": 1}]})");
const json kStackCard = json::parse(R"({"compute_efficiency": {"value": 0.5, "unit": "fraction"}})");

const Reader kScenarioReader = [](const json& doc) {
  load_scenario(write(scratch("scenario.json"), doc), Catalog::builtin());
};
const Reader kCardReader = [](const json& doc) {
  Catalog c = Catalog::builtin();
  c.add_card_file(write(scratch("mylink.json"), doc));
};
const Reader kMeasurementsReader = [](const json& doc) { load_measurements(write(scratch("published.json"), doc)); };
const Reader kStackCardReader = [](const json& doc) {
  write(scratch("profiles/mine.json"), doc);
  StackProfile::load(scratch("").string(), "mine");
};

// What `read` says about `doc`, as "file: pointer: reason" with the file name cut.
std::string refusal(const Reader& read, const json& doc) {
  try {
    read(doc);
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), e.file() + ": " + e.json_path() + ": " + e.reason());
    return e.json_path() + ": " + e.reason();
  }
  ADD_FAILURE() << "accepted " << doc.dump();
  return "";
}

json without(json doc, const json::json_pointer& p) {
  doc[p.parent_pointer()].erase(p.back());
  return doc;
}

json with(json doc, const json::json_pointer& p, json value) {
  doc[p] = std::move(value);
  return doc;
}

TEST(JsonInput, EveryReaderNamesAMissingKeyAlike) {
  EXPECT_EQ(refusal(kScenarioReader, without(kScenario, "/model"_json_pointer)),
            "/model: missing required key 'model'");
  EXPECT_EQ(refusal(kCardReader, without(kLinkCard, "/latency_us"_json_pointer)),
            "/latency_us: missing required key 'latency_us'");
  EXPECT_EQ(refusal(kMeasurementsReader, without(kMeasurements, "/decode/0/nodes"_json_pointer)),
            "/decode/0/nodes: missing required key 'nodes'");
}

TEST(JsonInput, EveryReaderNamesAWrongTypeAlike) {
  EXPECT_EQ(refusal(kScenarioReader, with(kScenario, "/seed"_json_pointer, "one")),
            "/seed: must be an integer, got \"one\"");
  EXPECT_EQ(refusal(kCardReader, with(kLinkCard, "/frame_bytes"_json_pointer, "one")),
            "/frame_bytes: must be an integer, got \"one\"");
  EXPECT_EQ(refusal(kCardReader, with(kLinkCard, "/frame_header_bytes"_json_pointer, -66)),
            "/frame_header_bytes: must be >= 0, got -66");
  EXPECT_EQ(refusal(kMeasurementsReader, with(kMeasurements, "/decode/0/nodes"_json_pointer, "one")),
            "/decode/0/nodes: must be an integer, got \"one\"");
  EXPECT_EQ(refusal(kStackCardReader, with(kStackCard, "/compute_efficiency/value"_json_pointer, "one")),
            "/compute_efficiency/value: must be a number, got \"one\"");
}

TEST(JsonInput, EveryReaderSuggestsTheKeyAMisspeltOneMeant) {
  auto typo = [](const json& doc, const std::string& key, const std::string& misspelt) {
    json out = doc;
    out[misspelt] = out[key];
    out.erase(key);
    return out;
  };
  auto starts = [](const std::string& text, const std::string& head) { return text.substr(0, head.size()) == head; };
  const std::string scenario = refusal(kScenarioReader, typo(kScenario, "description", "descripton"));
  EXPECT_TRUE(starts(scenario, "/descripton: unknown key 'descripton' (did you mean 'description'?); known: "))
      << scenario;
  const std::string card = refusal(kCardReader, typo(kLinkCard, "port_kind", "prot_kind"));
  EXPECT_TRUE(starts(card, "/prot_kind: unknown key 'prot_kind' (did you mean 'port_kind'?); known: ")) << card;
  const std::string measurements = refusal(kMeasurementsReader, typo(kMeasurements, "prefill", "prefil"));
  EXPECT_TRUE(starts(measurements, "/prefil: unknown key 'prefil' (did you mean 'prefill'?); known: ")) << measurements;
  const std::string stack = refusal(kStackCardReader, typo(kStackCard, "compute_efficiency", "compute_eficiency"));
  EXPECT_TRUE(starts(stack, "/compute_eficiency: unknown key 'compute_eficiency' (did you mean 'compute_efficiency'?)"))
      << stack;
}

TEST(JsonInput, ModelConfigsNameAMissingKeyAndAWrongTypeAlike) {
  const std::string dir = scratch("model").string();
  fs::create_directories(dir);
  const json config = json::parse(R"({"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 100})");
  const Reader read = [&](const json& doc) {
    write(fs::path(dir) / "config.json", doc);
    load_model_config(dir);
  };
  EXPECT_EQ(refusal(read, without(config, "/vocab_size"_json_pointer)),
            "/vocab_size: missing required key 'vocab_size'");
  EXPECT_EQ(refusal(read, with(config, "/hidden_size"_json_pointer, "one")),
            "/hidden_size: must be an integer, got \"one\"");
}

}  // namespace
}  // namespace engine
