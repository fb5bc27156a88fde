// `meshinfer make-model` and scenarios that name a model directory: the run
// computes real tokens (in report.json), byte-identically run after run.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"

namespace {

using testsupport::fresh_dir;
using testsupport::read_file;
using testsupport::run_cli;

// A scenario beside `model` (named relative to it): `nodes` M3 Ultras in `parallelism`.
std::string scenario_naming(const std::string& dir, const nlohmann::json& model, int nodes = 2,
                            const std::string& parallelism = "tensor", const std::string& name = "scenario") {
  nlohmann::json cluster_nodes = nlohmann::json::array();
  for (int n = 0; n < nodes; ++n)
    cluster_nodes.push_back({{"name", "n" + std::to_string(n)}, {"hardware", "m3-ultra-512gb"}});
  const nlohmann::json j = {
      {"name", "tiny-cpu"},
      {"cluster", {{"nodes", cluster_nodes}, {"fabric", {{"type", "full-mesh"}, {"link", "tb5-tcp"}}}}},
      {"model", model},
      {"parallelism", parallelism},
      {"workload", {{"requests", 2}, {"prompt_tokens", 9}, {"output_tokens", 5}, {"prefill_chunk", 4}}}};
  const std::string path = dir + "/" + name + ".json";
  std::ofstream(path) << j.dump(2);
  return path;
}

std::vector<nlohmann::json> output_ids(const std::string& report_dir) {
  const auto report = nlohmann::json::parse(read_file(report_dir + "/report.json"));
  std::vector<nlohmann::json> ids;
  for (const auto& r : report["requests"]) ids.push_back(r["output_ids"]);
  return ids;
}

TEST(MakeModel, WritesAModelAScenarioRunsWithRealTokens) {
  const std::string dir = fresh_dir("make-model-run");
  const auto made =
      run_cli("make-model --out " + dir + "/tiny --layers 2 --hidden 64 --heads 4 --kv-heads 2 --vocab 200 --seed 3");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::string scenario = scenario_naming(dir, {{"path", "tiny"}});
  const auto first = run_cli("run --quiet " + scenario + " --out " + dir + "/a");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("plan: tensor over 2 node(s)"), std::string::npos) << first.output;
  const auto report = nlohmann::json::parse(read_file(dir + "/a/report.json"));
  EXPECT_EQ(report["scenario"]["model"], "tiny");
  for (const auto& request : report["requests"]) {
    ASSERT_EQ(request["output_ids"].size(), 5u) << request.dump();
    for (const auto& id : request["output_ids"]) EXPECT_LT(id.get<int>(), 200);
  }
  EXPECT_NE(report["requests"][0]["output_ids"], report["requests"][1]["output_ids"]);  // their prompts differ
  // Deterministic like every run: the same bytes again.
  ASSERT_EQ(run_cli("run --quiet " + scenario + " --out " + dir + "/b").exit_code, 0);
  EXPECT_TRUE(read_file(dir + "/a/report.json") == read_file(dir + "/b/report.json"));
}

TEST(MakeModel, BadOptionsExitTwoNamingTheKey) {
  const auto r = run_cli("make-model --out " + fresh_dir("make-model-bad") + " --heads 8 --kv-heads 3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("num_key_value_heads"), std::string::npos) << r.output;
}

TEST(MakeModel, ScenarioNamingAMissingDirectoryExitsTwo) {
  const std::string dir = fresh_dir("make-model-missing");
  const auto r = run_cli("run " + scenario_naming(dir, {{"path", "nowhere"}}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/model/path"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is not a directory"), std::string::npos) << r.output;
}

TEST(MakeModel, ScenarioNamingADirectoryWithoutWeightsExitsTwo) {
  const std::string dir = fresh_dir("make-model-noweights");
  ASSERT_EQ(
      run_cli("make-model --out " + dir + "/m --layers 1 --hidden 32 --heads 2 --kv-heads 2 --experts 0 --vocab 50")
          .exit_code,
      0);
  std::filesystem::remove(dir + "/m/model.safetensors");
  const auto r = run_cli("run " + scenario_naming(dir, {{"path", "m"}}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("model.safetensors"), std::string::npos) << r.output;
}

// The tiny model as real processes over TCP (`launch`), in tensor and
// pipeline parallel, gives the greedy tokens of one simulated node.
TEST(MakeModel, RealProcessesGiveTheTokensOfOneNode) {
  const std::string dir = fresh_dir("make-model-launch");
  ASSERT_EQ(run_cli("make-model --out " + dir + "/tiny").exit_code, 0);
  const std::string one = scenario_naming(dir, {{"path", "tiny"}}, 1, "tensor", "one");
  ASSERT_EQ(run_cli("run --quiet " + one + " --out " + dir + "/one").exit_code, 0);
  const auto reference = output_ids(dir + "/one");
  ASSERT_EQ(reference.size(), 2u);
  ASSERT_EQ(reference[0].size(), 5u);
  for (const auto& [nodes, parallelism] : {std::pair{4, "tensor"}, std::pair{2, "pipeline"}}) {
    const std::string name = parallelism + std::to_string(nodes);
    const std::string scenario = scenario_naming(dir, {{"path", "tiny"}}, nodes, parallelism, name);
    const auto r = run_cli("launch --local " + std::to_string(nodes) + " " + scenario + " --out " + dir + "/" + name +
                           " --timeout 60");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(output_ids(dir + "/" + name), reference) << name;
  }
}

}  // namespace
