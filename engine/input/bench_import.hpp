// Calibration rows from a team's own benchmark runs, with the hardware they ran
// on: the JSON of llama.cpp's `llama-bench -o json` and the printed lines of
// mlx-lm's `mlx_lm.benchmark`, so the first hour on real machines corrects the cards.
#pragma once

#include <string>
#include <vector>

#include "engine/input/measurements.hpp"

namespace engine {

// What the output does not say, or says in words the catalog does not use.
struct BenchImport {
  std::string model;     // catalog model card
  std::string quant;     // catalog quantization; empty: from llama-bench's model_type ("Q4_K - Medium": q4_k_m)
  std::string hardware;  // hardware card of the machine that ran it
};

// Rows of `file`: llama-bench's array (one row per pp or tg test; a tg test at depth d
// decodes after d cached tokens), or mlx_lm.benchmark's "Averages" line (a prefill and
// a decode row at its prompt length). Each row names `file` as its source.
// Throws InputError (file, JSON path or line, reason).
std::vector<CalibrationRow> import_benchmark(const std::string& file, const BenchImport& setup);

// llama-bench's quantization words ("Q4_K - Medium", "Q8_0", "F16") as a catalog name
// ("q4_k_m", "q8_0", "fp16"); empty when unknown.
std::string llama_bench_quant(const std::string& model_type);

}  // namespace engine
