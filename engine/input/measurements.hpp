// Published measurements and the scenarios that reproduce them: which stack
// (profile), cluster, link and plan each row ran on, and the error measures a
// fit minimises. Pure: running the scenarios is sim/calibration's job.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/cards/stack_profile.hpp"
#include "engine/input/scenario.hpp"

namespace engine {

// Decode tokens generated per decode row (the first comes from the prefill step; batch-1 decode steps
// all cost the same, so a few measure it), and its default prompt.
inline constexpr int kDecodeOutputTokens = 8;
inline constexpr int kDecodePromptTokens = 32;

// One row to simulate: a published measurement, or a prediction (published 0).
struct CalibrationRow {
  std::string model;
  std::string quant;             // as simulated
  bool quant_uncertain = false;  // published as "q4_k_m?": simulated as q4_k_m
  std::string system;  // as published: exo-tensor-rdma, exo-mlx, mlx-lm-local, llamacpp-rpc-tcp, llamacpp-local
  std::string stack;   // the profile that models it
  int nodes = 1;
  bool prefill = false;                     // false: batch-1 decode
  int prompt_tokens = kDecodePromptTokens;  // prefill: the prompt; decode: the context before the decode
  double published = 0;                     // tokens/s; 0 when not measured
  std::string source;                       // where the figure was published
  std::string hardware;                     // hardware card of every node; empty: the measurements' cluster
  // Non-empty: the row belongs to this group of rows measured on builds unlike the others' (older, say), so
  // only the group's shape counts: its simulated figures are compared after dividing them by the group's
  // common factor (shape_factors).
  std::string shape_only;

  std::string label() const;  // "qwen3-235b-a22b 8bit decode x2 (exo-tensor-rdma)"
};

struct Measurements {
  std::vector<std::string> cluster;  // hardware of each node; an n-node row ran on the first n
  std::vector<CalibrationRow> rows;
};

// Reads published.json's "cluster", "decode" and "prefill". Throws InputError.
Measurements load_measurements(const std::string& file);
// `r` as a row of such a file (in its "decode" or "prefill" list, as r.prefill says).
nlohmann::json measurement_json(const CalibrationRow& r);

// The profile that models a published system: exo's MLX (exo-tensor-rdma,
// exo-mlx, mlx-lm-local: the same MLX kernels) or llama.cpp (llamacpp-rpc-tcp,
// llamacpp-local: same software on the same hardware). Throws InputError for an
// unknown system.
std::string stack_of(const std::string& system);

// How a stack runs: its link and its plan.
struct StackSetup {
  std::string link;
  Parallelism parallelism;
};
StackSetup stack_setup(const std::string& stack);

// The scenario of a row on the first `row.nodes` of `cluster` (or on row.hardware), over a full mesh of
// `link` (empty: the stack's): a batch-1 decode after its prompt (a short one by
// default), or one request of prompt_tokens producing a single token.
Scenario row_scenario(const CalibrationRow& row, const std::vector<std::string>& cluster, const std::string& link = "");

// A profile parameter the fit may move: {"value", "unit", "fit": [lower, upper]}
// in the profile file, bounds in the file's unit.
struct FitParameter {
  std::string key;
  double lower = 0, upper = 0;
  std::string profile;              // the profile file it lives in
  std::vector<std::string> stacks;  // the stacks that take it from there (stack_fit_parameters)
};
// The parameters of profile file `file` that carry "fit" bounds. Throws InputError.
std::vector<FitParameter> fit_parameters(const std::string& file);
// What a joint fit of `stacks` moves: the "fit" parameters of their profiles and of
// the profiles they are based_on (the hardware's, shared by every stack on it); a key
// a profile sets itself hides its base's. Throws InputError.
std::vector<FitParameter> stack_fit_parameters(const std::string& catalog_dir, const std::vector<std::string>& stacks);
// Writes `file` again to `out` with the numeric values of `p`: every other field
// (units, bounds, notes) is kept, one top-level key per line.
void write_profile(const std::string& file, const std::string& out, const StackProfile& p);

double relative_error(double simulated, double published);
// What each row's simulated figure is divided by before it is compared with the published one: 1, or for a
// row of a shape_only group the geometric mean of simulated / published over the group's rows (the speed of
// the group's builds against the calibrated ones, which the rows cannot tell from the model's error).
std::vector<double> shape_factors(const std::vector<double>& simulated, const std::vector<CalibrationRow>& rows);
// Each row's relative error after its shape factor.
std::vector<double> row_errors(const std::vector<double>& simulated, const std::vector<CalibrationRow>& rows);
// Sum of squared row_errors: what the fit minimises.
double squared_error(const std::vector<double>& simulated, const std::vector<CalibrationRow>& rows);

}  // namespace engine
