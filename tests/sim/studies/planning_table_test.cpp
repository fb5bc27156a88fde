// The planning table of reports/calibration.md: every model card at 1, 2 and 4
// nodes under every stack, each figure with the error cross-validation measured.
#include "sim/studies/planning_table.hpp"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

#include "engine/cards/stack_profile.hpp"
#include "support/cli_runner.hpp"

namespace {

using engine::Catalog;

const std::vector<std::string> kStacks = {"exo-tensor-rdma", "llamacpp-rpc-tcp", "meshinfer"};

sim::CrossValidatedRow held_out(bool prefill, double published, double predicted) {
  sim::CrossValidatedRow r;
  r.row.model = "m";
  r.row.stack = "exo-tensor-rdma";
  r.row.prefill = prefill;
  r.row.published = published;
  r.in_sample = r.held_out = predicted;
  return r;
}

TEST(PlanningTable, AFigureCarriesItsStacksHeldOutErrorAndMeshinferCarriesExos) {
  // Decode held out +10% and -20%: mean 15%, worst 20%. Prefill 25% fast: the prompt takes 20% less time.
  const sim::CrossValidation cv = {
      {"exo-tensor-rdma", {held_out(false, 20, 22), held_out(false, 20, 16), held_out(true, 100, 125)}}};
  const auto u = sim::planning_uncertainty("meshinfer", "exo-tensor-rdma", cv);
  EXPECT_EQ(u.measured_on, "exo-tensor-rdma");
  EXPECT_EQ(u.decode_rows, 2);
  EXPECT_EQ(u.prefill_rows, 1);
  EXPECT_NEAR(u.decode.mean_abs, 0.15, 1e-12);
  EXPECT_NEAR(u.decode.worst, 0.20, 1e-12);
  EXPECT_NEAR(u.ttft.worst, 0.20, 1e-12);

  const auto rows = sim::planning_rows(Catalog::builtin(), {"meshinfer"});
  std::vector<sim::RowRun> runs(rows.size());
  runs[0].tokens_per_s = 20;
  runs[0].ttft_s = 2;
  runs[1].tokens_per_s = 30;
  runs[1].ttft_s = 1;
  runs[2].refusal = "too big";
  const std::string table = sim::planning_table(rows, runs, {{"meshinfer", u}});
  EXPECT_NE(table.find("| 20.00 ± 3.00 (± 4.00) | 30.00 ± 4.50 (± 6.00) | does not fit | 2.00 ± 0.40 (± 0.40) | "
                       "1.00 ± 0.20 (± 0.20) | does not fit |"),
            std::string::npos)
      << table;
}

TEST(PlanningTable, RowsCoverEveryModelCardAtOneTwoAndFourNodesInEachStacksFourBitFormat) {
  const auto& catalog = Catalog::builtin();
  const auto rows = sim::planning_rows(catalog, kStacks);
  ASSERT_EQ(rows.size(), catalog.model_names().size() * kStacks.size() * 3);
  std::map<std::string, int> per_model;
  for (const auto& r : rows) {
    ++per_model[r.model];
    EXPECT_EQ(r.prompt_tokens, sim::kPlanningPromptTokens);
    EXPECT_FALSE(r.prefill);
    if (r.model == "qwen3-235b-a22b") {
      EXPECT_EQ(r.quant, r.stack == "llamacpp-rpc-tcp" ? "q4_k_m" : "4bit");
    }
    if (r.model == "kimi-k2-thinking") {
      EXPECT_EQ(r.quant, "int4");  // its only quantization
    }
  }
  for (const auto& model : catalog.model_names()) EXPECT_EQ(per_model[model], 9) << model;
}

// The planning table's line for `model` under `stack` in the shipped report, as cells ("" when absent).
std::vector<std::string> shipped_cells(const std::string& model, const std::string& stack) {
  std::istringstream md(testsupport::read_file(MESHINFER_SOURCE_DIR "/reports/calibration.md"));
  bool in_table = false;
  for (std::string line; std::getline(md, line);) {
    if (line.rfind("## ", 0) == 0) in_table = line.rfind("## Planning", 0) == 0;
    if (!in_table || line.rfind("| " + model + " | ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::istringstream cols(line.substr(1));
    for (std::string cell; std::getline(cols, cell, '|');) cells.push_back(cell.substr(1, cell.size() - 2));
    if (cells.size() == 9 && cells[2] == stack) return cells;
  }
  return {};
}

TEST(PlanningTable, TheShippedReportPlansEveryModelCardUnderEveryStackWithItsUncertainty) {
  const std::regex figure(R"(\d+\.\d\d ± \d+\.\d\d \(± \d+\.\d\d\)|does not fit)");
  for (const auto& model : Catalog::builtin().model_names())
    for (const auto& stack : kStacks) {
      const auto cells = shipped_cells(model, stack);
      ASSERT_EQ(cells.size(), 9u) << "no planning row for " << model << " under " << stack
                                  << " in reports/calibration.md (scripts/calibration-report)";
      for (std::size_t i = 3; i < cells.size(); ++i)
        EXPECT_TRUE(std::regex_match(cells[i], figure)) << model << " " << stack << ": '" << cells[i] << "'";
    }
}

// Generated, not written by hand: the simulator gives today the figures the report shows (one model: cheap).
TEST(PlanningTable, TheShippedFiguresAreWhatTheSimulatorGives) {
  const auto& catalog = Catalog::builtin();
  const auto m = engine::load_measurements(MESHINFER_SOURCE_DIR "/scenarios/calibration/published.json");
  sim::Profiles profiles;
  for (const auto& stack : kStacks) profiles.emplace(stack, engine::StackProfile::load(catalog.dir(), stack));
  std::vector<engine::CalibrationRow> rows;
  for (const auto& r : sim::planning_rows(catalog, kStacks))
    if (r.model == "llama-3.2-3b") rows.push_back(r);
  const auto runs = sim::run_rows(rows, m.cluster, catalog, profiles, 2);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto cells = shipped_cells(rows[i].model, rows[i].stack);
    ASSERT_EQ(cells.size(), 9u) << rows[i].label();
    const int column = rows[i].nodes == 4 ? 2 : rows[i].nodes - 1;
    ASSERT_TRUE(runs[i].refusal.empty()) << rows[i].label() << ": " << runs[i].refusal;
    EXPECT_NEAR(std::stod(cells[3 + column]), runs[i].tokens_per_s, 0.0051) << rows[i].label();
    EXPECT_NEAR(std::stod(cells[6 + column]), runs[i].ttft_s, 0.0051) << rows[i].label();
  }
}

}  // namespace
