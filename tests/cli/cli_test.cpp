// The command line as CI pipelines use it: exit codes, messages, reports.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using testsupport::read_file;
using testsupport::run_cli;

const std::string kScenarios = std::string(MESHINFER_SOURCE_DIR) + "/scenarios";

std::string write_scenario(const std::string& name, const nlohmann::json& j) {
  const std::string path = testsupport::fresh_dir(name) + "/" + name + ".json";
  std::ofstream(path) << j.dump(2);
  return path;
}

TEST(Cli, MalformedScenarioExitsTwoWithFileLineAndColumn) {
  const std::string path = testsupport::fresh_dir("malformed") + "/bad.json";
  std::ofstream(path) << "{\n  \"name\": \"x\",\n}\n";
  const auto r = run_cli("run " + path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("line 3, column 1"), std::string::npos) << r.output;
}

TEST(Cli, UnknownModelExitsTwoListingKnownModels) {
  auto j = nlohmann::json::parse(read_file(kScenarios + "/default.json"));
  j["model"]["name"] = "qwen9-1t";
  const auto r = run_cli("run " + write_scenario("unknown-model", j));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/model/name"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("qwen3-235b-a22b"), std::string::npos) << r.output;
}

TEST(Cli, ExpectationThatCannotHoldExitsOneNamingValueAndBound) {
  auto j = nlohmann::json::parse(read_file(kScenarios + "/ci/decode-speed-floor.json"));
  j["expect"] = {{"decode_tokens_per_s", {{"min", 1e6}}}};
  const std::string out = testsupport::fresh_dir("breach-out");
  const auto r = run_cli("run --quiet " + write_scenario("breach", j) + " --out " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("expectation failed: decode_tokens_per_s"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("must be >= 1e+06"), std::string::npos) << r.output;
  // The reports are written all the same, with the failed expectation in them.
  const auto report = nlohmann::json::parse(read_file(out + "/report.json"));
  EXPECT_FALSE(report["expectations"][0]["pass"].get<bool>());
}

TEST(Cli, ValidatePrintsThePlanWithoutRunning) {
  const auto r = run_cli("validate " + kScenarios + "/qwen3-235b-8bit-4node-pipeline.json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("plan: pipeline over 4 node(s)"), std::string::npos) << r.output;
}

TEST(Cli, VersionNamesTheTransportsBuilt) {
  const auto r = run_cli("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("transports: tcp"), std::string::npos) << r.output;
#ifdef MESHINFER_HAVE_VERBS
#ifdef __APPLE__
  EXPECT_NE(r.output.find("transports: tcp, verbs (librdma)"), std::string::npos) << r.output;
#else
  EXPECT_NE(r.output.find("transports: tcp, verbs (rdma-core libibverbs)"), std::string::npos) << r.output;
#endif
#else
  EXPECT_NE(r.output.find("verbs transport not built"), std::string::npos) << r.output;
#endif
}

// Every shipped scenario, run twice, gives byte-identical report.json and trace.json.
class Determinism : public testing::TestWithParam<std::string> {};

TEST_P(Determinism, SameScenarioSameSeedSameBytes) {
  const std::string scenario = kScenarios + "/" + GetParam();
  const std::string name = fs::path(GetParam()).stem().string();
  const std::string a = testsupport::fresh_dir(name + "-a"), b = testsupport::fresh_dir(name + "-b");
  const auto first = run_cli("run --quiet " + scenario + " --out " + a);
  const auto second = run_cli("run --quiet " + scenario + " --out " + b);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(second.exit_code, 0) << second.output;
  for (const char* file : {"/report.json", "/trace.json", "/report.md"}) {
    const std::string x = read_file(a + file), y = read_file(b + file);
    EXPECT_FALSE(x.empty()) << file;
    EXPECT_TRUE(x == y) << file << " differs between two runs of " << GetParam();
  }
}

std::vector<std::string> shipped_scenarios() {
  std::vector<std::string> out;
  for (const char* sub : {"", "ci/"})
    for (const auto& e : fs::directory_iterator(kScenarios + "/" + sub))
      if (e.path().extension() == ".json" && e.path().filename() != "scenario.schema.json")
        out.push_back(sub + e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shipped, Determinism, testing::ValuesIn(shipped_scenarios()), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

}  // namespace
