#include "sim/studies/planning_table.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace sim {

namespace {

constexpr int kNodeCounts[] = {1, 2, 4};

std::string planning_quant(const engine::ModelCard& card, const std::string& stack) {
  const std::string wanted = stack == "llamacpp-rpc-tcp" ? "q4_k_m" : "4bit";
  for (const auto& q : card.quantizations)
    if (q.name == wanted) return wanted;
  return card.quantizations.at(0).name;
}

// "21.31 ± 2.10 (± 3.60)": the figure, and the band of the stack's mean and worst held-out error.
std::string with_band(double value, const ErrorSummary& e, int rows) {
  if (rows == 0) return fmt::format("{:.2f} (not cross-validated)", value);
  return fmt::format("{:.2f} ± {:.2f} (± {:.2f})", value, value * e.mean_abs, value * e.worst);
}

}  // namespace

std::vector<engine::CalibrationRow> planning_rows(const engine::Catalog& catalog,
                                                  const std::vector<std::string>& stacks) {
  std::vector<engine::CalibrationRow> rows;
  for (const auto& model : catalog.model_names())
    for (const auto& stack : stacks)
      for (int nodes : kNodeCounts) {
        engine::CalibrationRow r;
        r.model = model;
        r.quant = planning_quant(catalog.model(model), stack);
        r.system = r.stack = stack;
        r.nodes = nodes;
        r.prompt_tokens = kPlanningPromptTokens;
        rows.push_back(r);
      }
  return rows;
}

PlanningUncertainty planning_uncertainty(const std::string& stack, const std::string& based_on,
                                         const CrossValidation& cv) {
  PlanningUncertainty u;
  u.measured_on = cv.count(stack) || !cv.count(based_on) ? stack : based_on;
  if (!cv.count(u.measured_on)) return u;
  std::vector<CrossValidatedRow> decode, prefill;
  for (const auto& r : cv.at(u.measured_on)) (r.row.prefill ? prefill : decode).push_back(r);
  u.decode_rows = static_cast<int>(decode.size());
  u.prefill_rows = static_cast<int>(prefill.size());
  if (!decode.empty()) u.decode = held_out_summary(decode);
  if (!prefill.empty()) u.ttft = held_out_time_summary(prefill);
  return u;
}

std::string planning_table(const std::vector<engine::CalibrationRow>& rows, const std::vector<RowRun>& runs,
                           const std::map<std::string, PlanningUncertainty>& uncertainty) {
  std::string out =
      "| model | quant | stack | decode x1 | decode x2 | decode x4 | TTFT x1 (s) | TTFT x2 (s) | TTFT x4 (s) |\n"
      "|---|---|---|---:|---:|---:|---:|---:|---:|\n";
  const std::size_t per_row = std::size(kNodeCounts);
  for (std::size_t i = 0; i + per_row <= rows.size(); i += per_row) {
    const auto& r = rows[i];
    const auto& u = uncertainty.at(r.stack);
    std::string decode, ttft;
    for (std::size_t k = i; k < i + per_row; ++k) {
      const RowRun& run = runs.at(k);
      const bool fits = run.refusal.empty();
      decode += " " + (fits ? with_band(run.tokens_per_s, u.decode, u.decode_rows) : "does not fit") + " |";
      ttft += " " + (fits ? with_band(run.ttft_s, u.ttft, u.prefill_rows) : "does not fit") + " |";
    }
    out += fmt::format("| {} | {} | {} |{}{}\n", r.model, r.quant, r.stack, decode, ttft);
  }
  return out;
}

std::string uncertainty_table(const std::map<std::string, PlanningUncertainty>& uncertainty) {
  std::string out =
      "| stack | measured on | decode rows | decode mean / worst | prefill rows | TTFT mean / worst |\n"
      "|---|---|---:|---:|---:|---:|\n";
  for (const auto& [stack, u] : uncertainty)
    out += fmt::format("| {} | {} | {} | {:.1f}% / {:.1f}% | {} | {:.1f}% / {:.1f}% |\n", stack, u.measured_on,
                       u.decode_rows, 100 * u.decode.mean_abs, 100 * u.decode.worst, u.prefill_rows,
                       100 * u.ttft.mean_abs, 100 * u.ttft.worst);
  return out;
}

}  // namespace sim
