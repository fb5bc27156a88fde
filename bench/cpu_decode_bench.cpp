// CpuBackend decode speed of the tiny model (make-model's defaults) on 1 rank
// against 2 and 4 TcpRuntime ranks (processes on loopback, sharing this
// machine's cores), side by side with the ratio to 1 rank.
// Usage: cpu_decode_bench [output tokens per request, default 64]
#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "engine/checkpoint/random_model.hpp"
#include "engine/input/scenario_file.hpp"
#include "engine/report/report.hpp"
#include "support/cli_runner.hpp"
#include "support/cpu_engine.hpp"
#include "support/tcp_cluster.hpp"

namespace {

struct Figures {
  double decode_tokens_per_s = 0, per_request_tokens_per_s = 0;
};

Figures run(const std::string& dir, int ranks, engine::Strategy strategy, int batch, int output) {
  const auto s = testsupport::cpu_scenario(dir, ranks, batch, 16, output, batch, 16);
  const auto results = testsupport::run_tcp_cluster(ranks, [&](engine::Runtime& rt) {
    const auto result = testsupport::run_cpu_engine(rt, s, strategy);
    if (rt.rank() != 0) return std::string();
    const auto catalog = engine::catalog_for(s, engine::Catalog::builtin());
    const auto report =
        engine::build_report(s, catalog, engine::make_plan(s, catalog, strategy), s.profile, result, s.seed);
    return fmt::format("{} {}", report["summary"]["decode_tokens_per_s"].get<double>(),
                       report["summary"]["per_request_decode_tokens_per_s"].get<double>());
  });
  for (const auto& r : results)
    if (!r.ok) throw std::runtime_error(fmt::format("{} ranks, {}: {}", ranks, engine::to_string(strategy), r.output));
  Figures f;
  std::sscanf(results[0].output.c_str(), "%lf %lf", &f.decode_tokens_per_s, &f.per_request_tokens_per_s);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const int output = argc > 1 ? std::atoi(argv[1]) : 64;
  const std::string dir = testsupport::fresh_dir("cpu-decode-bench");
  engine::write_random_model(dir, engine::tiny_model_config(), 1);

  fmt::print("CpuBackend decode, tiny qwen3_moe model, {} output tokens per request, TcpRuntime ranks on loopback\n\n",
             output);
  fmt::print("| batch | ranks | parallelism | decode tok/s | per-request tok/s | vs 1 rank |\n");
  fmt::print("|---|---|---|---|---|---|\n");
  for (int batch : {1, 8}) {
    const Figures one = run(dir, 1, engine::Strategy::kTensor, batch, output);
    fmt::print("| {} | 1 | - | {:.1f} | {:.1f} | 1.00 |\n", batch, one.decode_tokens_per_s,
               one.per_request_tokens_per_s);
    for (const auto& [ranks, strategy] : {std::pair{2, engine::Strategy::kTensor},
                                          {4, engine::Strategy::kTensor},
                                          {4, engine::Strategy::kPipeline},
                                          {4, engine::Strategy::kExpert}}) {
      const Figures f = run(dir, ranks, strategy, batch, output);
      fmt::print("| {} | {} | {} | {:.1f} | {:.1f} | {:.2f} |\n", batch, ranks, engine::to_string(strategy),
                 f.decode_tokens_per_s, f.per_request_tokens_per_s, f.decode_tokens_per_s / one.decode_tokens_per_s);
    }
  }
  return 0;
}
