// reports/calibration.md's planning table: every model card at 1, 2 and 4 nodes
// under every stack, decode tok/s and TTFT, each with the error cross-validation
// measured for the stack on models it was not fitted to.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/input/measurements.hpp"
#include "sim/studies/calibration_fit.hpp"
#include "sim/studies/cross_validation.hpp"

namespace sim {

// The prompt before each planning row's decode: its TTFT is this prompt's.
inline constexpr int kPlanningPromptTokens = 1024;

// Every model card of `catalog` at 1, 2 and 4 nodes under each of `stacks`: a batch-1
// decode after a kPlanningPromptTokens prompt, in the stack's 4-bit format (llama.cpp
// q4_k_m, MLX 4bit) where the card has it, else the card's first quantization.
std::vector<engine::CalibrationRow> planning_rows(const engine::Catalog& catalog,
                                                  const std::vector<std::string>& stacks);

// What leave-one-model-out measured on a stack's rows: decode tok/s error over its
// decode rows, TTFT error (the time a prompt takes) over its prefill rows.
struct PlanningUncertainty {
  std::string measured_on;  // the stack whose rows these are
  ErrorSummary decode, ttft;
  int decode_rows = 0, prefill_rows = 0;
};
// The rows of `stack`, or, when it has none, of `based_on` (the profile it takes its values from).
PlanningUncertainty planning_uncertainty(const std::string& stack, const std::string& based_on,
                                         const CrossValidation& cv);

// The table (markdown; its words are the report template's). REQUIRES: runs[i] is rows[i] run
// (run_rows), rows in planning_rows' order; `uncertainty` has every stack of `rows`.
std::string planning_table(const std::vector<engine::CalibrationRow>& rows, const std::vector<RowRun>& runs,
                           const std::map<std::string, PlanningUncertainty>& uncertainty);
// The uncertainty of every stack, a table (markdown).
std::string uncertainty_table(const std::map<std::string, PlanningUncertainty>& uncertainty);

}  // namespace sim
