// Runs calibration rows (each in a child process: one SimGrid engine per
// process) and fits a profile's free parameters to the published figures.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/cards/stack_profile.hpp"
#include "engine/input/measurements.hpp"

namespace sim {

// One decode token on one node: a row's median (engine/report/bottleneck.hpp).
struct TokenBreakdown {
  std::string node, hardware;
  double token_s = 0;    // from the previous step's end to this one's
  double compute_s = 0;  // the node's own ops
  double comm_s = 0;     // in send/recv while a message was under way
  double wait_s = 0;     // blocked on a peer that had not sent yet, or between steps
};

struct RowRun {
  double tokens_per_s = 0;            // decode or prefill, as the row measures
  double ttft_s = 0;                  // the request's time to its first token
  std::string refusal;                // the planner's reason when the model cannot be placed
  std::string strategy;               // the plan that ran
  std::vector<TokenBreakdown> nodes;  // decode rows
};

// Simulates `row` on the first row.nodes of `cluster` in a child process.
// `link` overrides the stack's link card (it must be in `catalog`).
// Throws std::runtime_error when the simulation fails.
RowRun run_row(const engine::CalibrationRow& row, const std::vector<std::string>& cluster,
               const engine::Catalog& catalog, const engine::StackProfile& profile, const std::string& link = "");

// Every stack's profile, by stack name.
using Profiles = std::map<std::string, engine::StackProfile>;

// Every row, each with its stack's profile, on `jobs` worker processes (the result
// does not depend on it); a row that cannot be placed has its refusal. Throws when
// a simulation fails.
std::vector<RowRun> run_rows(const std::vector<engine::CalibrationRow>& rows, const std::vector<std::string>& cluster,
                             const engine::Catalog& catalog, const Profiles& profiles, int jobs);

// tokens/s of every row, as run_rows; throws when one cannot be placed or fails.
std::vector<double> simulate_rows(const std::vector<engine::CalibrationRow>& rows,
                                  const std::vector<std::string>& cluster, const engine::Catalog& catalog,
                                  const Profiles& profiles, int jobs);

struct FitResult {
  Profiles profiles;
  std::vector<double> simulated;  // per row, with the fitted profiles
  double squared_error = 0;
  int evaluations = 0;
};

// Least squares on relative error over `rows` (any stacks), each parameter within
// its bounds and set on every stack that takes it, with NLopt's bounded
// derivative-free BOBYQA, starting from `start`.
FitResult fit_profiles(const std::vector<engine::CalibrationRow>& rows, const std::vector<std::string>& cluster,
                       const engine::Catalog& catalog, const Profiles& start,
                       const std::vector<engine::FitParameter>& parameters, int max_evaluations, int jobs);

}  // namespace sim
