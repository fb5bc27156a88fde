// The command line as CI pipelines use it: exit codes, messages, reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// CLI11 gave its own codes (105, 106, ...) and no `error:`; the README promises 2.
TEST(Cli, BadFlagsExitTwoWithError) {
  for (const std::string args : {"run --bogus", "run", "plan --model qwen3-235b-a22b --jobs x"}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find("error: "), std::string::npos) << args << ": " << r.output;
  }
  EXPECT_EQ(run_cli("--help").exit_code, 0);
}

// A flag's value that is a typo away from a name gets the same hint a scenario file does.
TEST(Cli, AMistypedFlagValueIsAnsweredWithDidYouMean) {
  const std::string out = testsupport::fresh_dir("did-you-mean");
  const std::vector<std::pair<std::string, std::string>> typos = {
      {"plan --model llama-3.3-70b --hardware m3-ultra-256 --out " + out,
       "--hardware: m3-ultra-256: unknown hardware card 'm3-ultra-256' (did you mean 'm3-ultra-256gb'?)"},
      {"plan --model llama-3.3-7b --out " + out, "(did you mean 'llama-3.3-70b'?)"},
      {"plan --model llama-3.3-70b --links tb5-rdm --out " + out, "(did you mean 'tb5-rdma'?)"},
      {"plan --model llama-3.3-70b --strategies tensr --out " + out, "(did you mean 'tensor'?)"},
      {"chaos " + kScenarios + "/ci/node-crash-replan.json --seeds 1..1 --faults node-crsh --out " + out,
       "--faults: node-crsh: unknown fault kind 'node-crsh' (did you mean 'node-crash'?)"}};
  for (const auto& [args, hint] : typos) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find(hint), std::string::npos) << args << ": " << r.output;
  }
}

// A one-off question without editing the scenario: its workload from flags.
TEST(Cli, RunTakesTheWorkloadFromFlags) {
  const std::string out = testsupport::fresh_dir("workload-flags");
  const auto r = run_cli("run --quiet " + kScenarios +
                         "/default.json --requests 3 --prompt-tokens 64 --output-tokens 8 --concurrency 2 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto report = nlohmann::json::parse(read_file(out + "/report.json"));
  EXPECT_EQ(report["summary"]["requests"]["completed"], 3);
  EXPECT_EQ(report["summary"]["output_tokens"], 24);
  const auto trace = run_cli("run --quiet " + kScenarios + "/trace-replay.json --prompt-tokens 64 --out " + out);
  EXPECT_EQ(trace.exit_code, 2) << trace.output;
  EXPECT_NE(trace.output.find("--prompt-tokens: /: the scenario replays a request trace"), std::string::npos)
      << trace.output;
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

std::vector<std::string> shipped_scenarios() {
  std::vector<std::string> out;
  for (const char* sub : {"", "ci/"})
    for (const auto& e : fs::directory_iterator(kScenarios + "/" + sub))
      if (e.path().extension() == ".json" && e.path().filename() != "scenario.schema.json")
        out.push_back(sub + e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Every shipped scenario.
class ShippedScenario : public testing::TestWithParam<std::string> {
 protected:
  // The report directory of a run at `level` (`tag` tells runs apart).
  std::string run_at(const std::string& level, const std::string& tag) const {
    const std::string dir = testsupport::fresh_dir(fs::path(GetParam()).stem().string() + "-" + tag);
    const auto r = run_cli("run --quiet " + kScenarios + "/" + GetParam() + " --level " + level + " --out " + dir);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return dir;
  }
};

// The unoptimized posix-only build runs the cli tests again for their OS
// calls; the flow level is the simulator's alone, checked in the main build.
#ifdef MESHINFER_POSIX_ONLY
const std::vector<std::string> kLevels{"message"};
#else
const std::vector<std::string> kLevels{"message", "flow"};
#endif

// Run twice, it gives byte-identical report.json and trace.json, at either level.
TEST_P(ShippedScenario, SameScenarioSameSeedSameBytes) {
  for (const std::string& level : kLevels) {
    const std::string a = run_at(level, level + "-a"), b = run_at(level, level + "-b");
    for (const char* file : {"/report.json", "/trace.json", "/report.md"}) {
      const std::string x = read_file(a + file), y = read_file(b + file);
      EXPECT_FALSE(x.empty()) << file;
      EXPECT_TRUE(x == y) << file << " differs between two runs of " << GetParam() << " at the " << level << " level";
    }
  }
}

#ifndef MESHINFER_POSIX_ONLY
// The flow level against the message level, its reference: the same request
// outcomes and recovery decisions, and speeds, TTFT, ITL and recovery times
// within 2%. Each report says which level produced it.
TEST_P(ShippedScenario, FlowLevelAgreesWithTheMessageLevel) {
  const auto message = nlohmann::json::parse(read_file(run_at("message", "message") + "/report.json"));
  const auto flow = nlohmann::json::parse(read_file(run_at("flow", "flow") + "/report.json"));
  EXPECT_EQ(message["scenario"]["simulation_level"], "message");
  EXPECT_EQ(flow["scenario"]["simulation_level"], "flow");
  for (const char* metric : {"/summary/decode_tokens_per_s", "/summary/prefill_tokens_per_s", "/summary/ttft_s/p50",
                             "/summary/ttft_s/p99", "/summary/itl_s/p50", "/summary/itl_s/p99",
                             "/faults/time_to_detect_s", "/faults/time_to_recover_s", "/faults/downtime_s"}) {
    const nlohmann::json::json_pointer at(metric);
    if (!message.contains(at) || !message[at].is_number()) {
      EXPECT_EQ(flow.value(at, nlohmann::json()), message.value(at, nlohmann::json())) << metric;
      continue;
    }
    const double reference = message[at].get<double>();
    EXPECT_NEAR(flow[at].get<double>(), reference, 0.02 * std::abs(reference)) << metric;
  }
  const auto outcomes = [](const nlohmann::json& report) {
    std::vector<nlohmann::json> out;
    for (const auto& r : report["requests"]) out.push_back({r["status"], r["error"], r["tokens"], r["tries"]});
    return out;
  };
  EXPECT_EQ(outcomes(flow), outcomes(message));
  // Members that notice a failure microseconds apart may note it in either order.
  const auto decisions = [](const nlohmann::json& report) {
    std::vector<std::string> out;
    for (const auto& e : report["events"]) out.push_back(e["kind"].dump() + e["target"].dump() + e["detail"].dump());
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(decisions(flow), decisions(message));
  EXPECT_EQ(flow["placements"].size(), message["placements"].size());
  for (std::size_t i = 0; i < std::min(flow["placements"].size(), message["placements"].size()); ++i)
    EXPECT_EQ(flow["placements"][i]["plan"], message["placements"][i]["plan"]) << "placement " << i;
}
#endif

INSTANTIATE_TEST_SUITE_P(Shipped, ShippedScenario, testing::ValuesIn(shipped_scenarios()), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

}  // namespace
