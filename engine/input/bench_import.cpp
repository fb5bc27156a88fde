#include "engine/input/bench_import.hpp"

#include <fmt/format.h>

#include <regex>
#include <utility>

#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"

namespace engine {

namespace {

CalibrationRow row(const BenchImport& setup, const std::string& system, bool prefill, int prompt_tokens,
                   double tokens_per_s, std::string source) {
  CalibrationRow r;
  r.model = setup.model;
  r.quant = setup.quant;
  r.system = system;
  r.stack = stack_of(system);
  r.prefill = prefill;
  r.prompt_tokens = prompt_tokens;
  r.published = tokens_per_s;
  r.source = std::move(source);
  r.hardware = setup.hardware;
  return r;
}

// tools/llama-bench/llama-bench.cpp, json_printer: one object per test, "n_prompt"
// and "n_gen" say which (pp: prompt only, tg: generation only), "avg_ts" its tokens/s.
std::vector<CalibrationRow> llama_bench(const std::string& file, BenchImport setup) {
  const nlohmann::json j = load_json(file);
  const JsonValue root(j, "", file);
  std::vector<CalibrationRow> out;
  for (const JsonValue& v : root.elements()) {
    JsonObject test(v);
    const int prompt = test.req<int>("n_prompt", kNonNegative), gen = test.req<int>("n_gen", kNonNegative);
    const int depth = test.opt<int>("n_depth", 0, kNonNegative);
    const double tps = test.req<double>("avg_ts", kPositive);
    const auto type = test.req<std::string>("model_type");
    BenchImport s = setup;
    if (s.quant.empty()) s.quant = llama_bench_quant(type);
    if (s.quant.empty()) test.need("model_type").fail("no catalog quantization for \"" + type + "\": pass --quant");
    const std::string source =
        fmt::format("{} ({}, llama-bench build {} {}, {})", file, v.path(), test.opt<int>("build_number", 0),
                    test.opt<std::string>("build_commit", "?"), test.opt<std::string>("gpu_info", "gpu not named"));
    if (prompt > 0 && gen == 0 && depth == 0) {
      out.push_back(row(s, "llamacpp-local", true, prompt, tps, source));
    } else if (prompt == 0 && gen > 0) {
      out.push_back(row(s, "llamacpp-local", false, depth > 0 ? depth : kDecodePromptTokens, tps, source));
    } else {
      v.fail("only pp tests (n_prompt, no n_gen, no n_depth) and tg tests (n_gen, no n_prompt) make calibration rows");
    }
  }
  if (out.empty()) root.fail("no tests");
  return out;
}

// mlx_lm/benchmark.py prints "Timing with prompt_tokens=P, generation_tokens=G,
// batch_size=B." and, after its trials, "Averages: prompt_tps=X, generation_tps=Y, ...".
std::vector<CalibrationRow> mlx_benchmark(const std::string& file, const BenchImport& setup, const std::string& text) {
  if (setup.quant.empty()) throw InputError(file, "", "mlx_lm.benchmark does not name the quantization: pass --quant");
  static const std::regex timing(R"(Timing with prompt_tokens=(\d+), generation_tokens=(\d+), batch_size=(\d+))");
  static const std::regex averages(R"(Averages: prompt_tps=([0-9.]+), generation_tps=([0-9.]+))");
  std::smatch t, a;
  if (!std::regex_search(text, t, timing))
    throw InputError(file, "", "no \"Timing with prompt_tokens=...\" line: is this mlx_lm.benchmark's output?");
  if (!std::regex_search(text, a, averages)) throw InputError(file, "", "no \"Averages: prompt_tps=...\" line");
  if (std::stoi(t[3]) != 1) throw InputError(file, "", "batch_size " + t[3].str() + ": calibration rows are batch 1");
  const int prompt = std::stoi(t[1]);
  const std::string source =
      fmt::format("{} (mlx_lm.benchmark, {} prompt and {} generated tokens, averages)", file, prompt, t[2].str());
  return {row(setup, "mlx-lm-local", true, prompt, std::stod(a[1]), source),
          row(setup, "mlx-lm-local", false, prompt, std::stod(a[2]), source)};
}

}  // namespace

std::string llama_bench_quant(const std::string& model_type) {
  static const std::pair<const char*, const char*> kNames[] = {{"Q4_K - Medium", "q4_k_m"},
                                                               {"Q4_K - Small", "q4_k_s"},
                                                               {"Q5_K - Medium", "q5_k_m"},
                                                               {"Q6_K", "q6_k"},
                                                               {"Q8_0", "q8_0"},
                                                               {"Q4_0", "q4_0"},
                                                               {"BF16", "bf16"},
                                                               {"F16", "fp16"}};
  for (const auto& [words, name] : kNames)
    if (model_type.size() >= std::string_view(words).size() && model_type.ends_with(words)) return name;
  return "";
}

std::vector<CalibrationRow> import_benchmark(const std::string& file, const BenchImport& setup) {
  const std::string text = read_text_file(file);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') return llama_bench(file, setup);
  return mlx_benchmark(file, setup, text);
}

}  // namespace engine
