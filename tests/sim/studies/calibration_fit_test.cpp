// Re-runs every published row with the committed profiles (no refit): a later
// change to the engine, a card or a profile cannot silently break the fit.
#include "sim/studies/calibration_fit.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/measurements.hpp"
#include "engine/stack_card.hpp"

namespace {

using engine::Catalog;

// The bars: every row within 10%, each stack's mean absolute error under 5%.
constexpr double kRowBound = 0.10;
constexpr double kMeanBound = 0.05;

std::string profile_file(const std::string& name) { return Catalog::builtin().dir() + "/profiles/" + name + ".json"; }

TEST(Calibration, CommittedProfilesReproduceEveryPublishedRow) {
  const auto& catalog = Catalog::builtin();
  const auto m = engine::load_measurements(MESHINFER_SOURCE_DIR "/scenarios/calibration/published.json");
  std::map<std::string, std::vector<double>> errors;
  for (const auto& row : m.rows) {
    const auto profile = engine::StackCard::load(catalog.dir(), row.stack);
    const auto run = sim::run_row(row, m.cluster, catalog, profile);
    ASSERT_TRUE(run.refusal.empty()) << row.label() << ": " << run.refusal;
    const double e = engine::relative_error(run.tokens_per_s, row.published);
    EXPECT_LE(std::abs(e), kRowBound) << row.label() << ": published " << row.published << ", simulated "
                                      << run.tokens_per_s;
    errors[row.stack].push_back(std::abs(e));
  }
  EXPECT_EQ(errors.size(), 2u);
  for (const auto& [stack, e] : errors) {
    double sum = 0;
    for (double x : e) sum += x;
    EXPECT_LT(sum / e.size(), kMeanBound) << stack;
  }
}

TEST(Calibration, FittedParametersStayInsideTheirPhysicalBounds) {
  for (const char* name : {"exo-tensor-rdma", "llamacpp-rpc-tcp"}) {
    const auto p = engine::StackCard::load(Catalog::builtin().dir(), name);
    EXPECT_GE(p.memory_bandwidth_efficiency, 0.3) << name;
    EXPECT_LE(p.memory_bandwidth_efficiency, 0.95) << name;
    const auto bounds = engine::fit_parameters(profile_file(name));
    EXPECT_FALSE(bounds.empty()) << name;
    for (const auto& b : bounds) {
      EXPECT_GE(p.get(b.key), b.lower) << name << " " << b.key;
      EXPECT_LE(p.get(b.key), b.upper) << name << " " << b.key;
    }
  }
}

// meshinfer runs MLX-class kernels on exo's hardware and RDMA: exo's measured
// parameters, its own plan (no RPC round trips).
TEST(Calibration, MeshinferTakesExosMeasuredParameters) {
  const auto& dir = Catalog::builtin().dir();
  const auto exo = engine::StackCard::load(dir, "exo-tensor-rdma");
  const auto mesh = engine::StackCard::load(dir, "meshinfer");
  for (const auto& key : engine::StackCard::numeric_keys()) EXPECT_EQ(mesh.get(key), exo.get(key)) << key;
  EXPECT_FALSE(mesh.stage_round_trip);
}

}  // namespace
