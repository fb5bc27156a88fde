// The tiny model's greedy tokens do not depend on where it runs: one rank,
// tensor, pipeline and expert parallel over real TcpRuntime processes, and the
// simulator (also through a node crash and re-placement) all produce the
// 1-rank reference's token ids.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "engine/checkpoint/random_model.hpp"
#include "engine/input/scenario_file.hpp"
#include "sim/child_run.hpp"
#include "sim/scenario_run.hpp"
#include "support/cli_runner.hpp"
#include "support/cpu_engine.hpp"
#include "support/tcp_cluster.hpp"

namespace {

// 3 requests, 2 at a time: decode steps batch with prefill chunks (of 5, so a
// prompt of 11 takes three), and later requests start mid-run.
constexpr int kRequests = 3, kPrompt = 11, kOutput = 6, kConcurrency = 2, kChunk = 5;

class CpuTokens : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testsupport::fresh_dir("tiny-model");
    engine::ModelConfig c = engine::tiny_model_config();  // 4 layers, hidden 256, 8 heads, 4 KV heads, 8 experts top-2
    c.moe_intermediate_size = 128;                        // smaller experts and vocabulary: a faster test
    c.vocab_size = 384;
    engine::write_random_model(dir_, c, 42);
    reference_ = over_tcp(1, engine::Strategy::kTensor);
  }

  static engine::Scenario scenario(int nodes) {
    return testsupport::cpu_scenario(dir_, nodes, kRequests, kPrompt, kOutput, kConcurrency, kChunk);
  }

  // Rank 0's token ids, with `n` TcpRuntime ranks in processes of their own.
  static std::string over_tcp(int n, engine::Strategy strategy, const std::string& profile = "meshinfer") {
    auto s = scenario(n);
    s.profile = profile;
    const auto results = testsupport::run_tcp_cluster(
        n, [&](engine::Runtime& rt) { return testsupport::output_ids(testsupport::run_cpu_engine(rt, s, strategy)); },
        120);
    for (int r = 0; r < n; ++r)
      if (!results[r].ok) return "rank " + std::to_string(r) + " failed: " + results[r].output;
    return results[0].output;
  }

  // The same in the simulator (SimRuntime), as `meshinfer run` runs a scenario naming a model directory.
  static std::string simulated(int n, engine::Strategy strategy) {
    const auto r = sim::run_in_child([&] {
      const auto s = scenario(n);
      const auto catalog = engine::catalog_for(s, engine::Catalog::builtin());
      const auto profile = engine::StackProfile::load(catalog.dir(), s.profile);
      const auto result = sim::simulate(s, catalog, engine::make_plan(s, catalog, strategy), profile,
                                        engine::make_requests(s.workload, s.seed));
      return testsupport::output_ids(result);
    });
    return r.ok ? r.output : "simulation failed: " + r.output;
  }

  static inline std::string dir_, reference_;
};

TEST_F(CpuTokens, ReferenceProducesEveryTokenAndTheyVary) {
  std::istringstream requests(reference_);
  int count = 0;
  for (std::string ids; std::getline(requests, ids, ';'); ++count) {
    std::istringstream in(ids);
    std::vector<int> tokens;
    for (int id; in >> id;) tokens.push_back(id);
    EXPECT_EQ(tokens.size(), static_cast<std::size_t>(kOutput)) << reference_;
    EXPECT_GT(std::set<int>(tokens.begin(), tokens.end()).size(), 2u) << "degenerate tokens: " << reference_;
  }
  EXPECT_EQ(count, kRequests) << reference_;
}

TEST_F(CpuTokens, TensorParallelOverTwoAndFourRanks) {
  EXPECT_EQ(over_tcp(2, engine::Strategy::kTensor), reference_);
  EXPECT_EQ(over_tcp(4, engine::Strategy::kTensor), reference_);
}

TEST_F(CpuTokens, UnevenTensorParallelOverThreeRanks) {
  // 8 heads over 3: 3, 3 and 2 heads; KV heads shared across the split are replicated.
  EXPECT_EQ(over_tcp(3, engine::Strategy::kTensorUneven), reference_);
}

TEST_F(CpuTokens, PipelineOverTwoAndFourRanks) {
  EXPECT_EQ(over_tcp(2, engine::Strategy::kPipeline), reference_);
  EXPECT_EQ(over_tcp(4, engine::Strategy::kPipeline), reference_);
  // llama.cpp's RPC style: every stage boundary goes through rank 0.
  EXPECT_EQ(over_tcp(3, engine::Strategy::kPipeline, "llamacpp-rpc-tcp"), reference_);
}

TEST_F(CpuTokens, ExpertParallelOverTwoAndFourRanks) {
  EXPECT_EQ(over_tcp(2, engine::Strategy::kExpert), reference_);
  EXPECT_EQ(over_tcp(4, engine::Strategy::kExpert), reference_);
}

TEST_F(CpuTokens, SimulatorComputesTheSameTokens) {
  EXPECT_EQ(simulated(1, engine::Strategy::kTensor), reference_);
  EXPECT_EQ(simulated(4, engine::Strategy::kTensor), reference_);
  EXPECT_EQ(simulated(2, engine::Strategy::kPipeline), reference_);
}

TEST_F(CpuTokens, NodeCrashMidRunIsReplannedWithoutChangingATokenInTheSimulator) {
  const auto r = sim::run_in_child([&] {
    auto s = scenario(4);
    s.faults.push_back({});
    s.faults[0].at_s = 0.004;  // simulated: mid-decode
    s.faults[0].kind = engine::FaultKind::kNodeCrash;
    s.faults[0].target = "n3";
    s.faults[0].node = 3;
    s.recovery = engine::RecoveryPolicy::kReplan;
    const auto catalog = engine::catalog_for(s, engine::Catalog::builtin());
    const auto profile = engine::StackProfile::load(catalog.dir(), s.profile);
    const auto result = sim::simulate(s, catalog, engine::make_plan(s, catalog, engine::Strategy::kTensor), profile,
                                      engine::make_requests(s.workload, s.seed));
    // The survivors re-prefill what was cached (prompts and tokens so far) on a new placement.
    if (result.tokens_recomputed == 0) throw std::runtime_error("the crash came when nothing was in flight");
    return testsupport::output_ids(result);
  });
  ASSERT_TRUE(r.ok) << r.output;
  EXPECT_EQ(r.output, reference_);
}

}  // namespace
