// Cross-validates the committed profiles' fit (each model predicted by a fit to
// the others): a change to the engine, a card or a bound that makes the
// simulator predict worse fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/measurements.hpp"
#include "engine/stack_card.hpp"
#include "sim/studies/cross_validation.hpp"

namespace {

using engine::Catalog;

// Leave one model out: the errors on models the fit has not seen, at the bounds
// the published rows support today (reports/calibration.md has the table).
struct HeldOutBound {
  const char* stack;
  double mean, worst;
};
constexpr HeldOutBound kHeldOutBounds[] = {{"exo-tensor-rdma", 0.56, 0.75}, {"llamacpp-rpc-tcp", 0.10, 0.18}};
constexpr int kMaxEvaluations = 200;  // as `meshinfer calibrate`

std::string profile_file(const std::string& name) { return Catalog::builtin().dir() + "/profiles/" + name + ".json"; }

TEST(Calibration, ProfilesPredictEveryModelTheyWereNotFittedTo) {
  const auto& catalog = Catalog::builtin();
  const auto m = engine::load_measurements(MESHINFER_SOURCE_DIR "/scenarios/calibration/published.json");
  for (const auto& bound : kHeldOutBounds) {
    std::vector<engine::CalibrationRow> rows;
    for (const auto& r : m.rows)
      if (r.stack == bound.stack) rows.push_back(r);
    const auto cv = sim::cross_validate(rows, m.cluster, catalog, engine::StackCard::load(catalog.dir(), bound.stack),
                                        engine::fit_parameters(profile_file(bound.stack)), kMaxEvaluations);
    ASSERT_EQ(cv.size(), rows.size());
    for (const auto& r : cv) EXPECT_GT(r.held_out, 0) << r.row.label();
    const auto held = sim::held_out_summary(cv);
    EXPECT_LE(held.mean_abs, bound.mean) << bound.stack;
    EXPECT_LE(held.worst, bound.worst) << bound.stack << ": " << held.worst_row;
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
