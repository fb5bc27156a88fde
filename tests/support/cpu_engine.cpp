#include "support/cpu_engine.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/cards/stack_profile.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/checkpoint/weight_layout.hpp"
#include "engine/compute/cpu_backend.hpp"
#include "engine/input/scenario_file.hpp"
#include "engine/input/workload.hpp"
#include "engine/node/recovery.hpp"

namespace testsupport {

engine::Scenario cpu_scenario(const std::string& model_dir, int nodes, int requests, int prompt, int output,
                              int concurrency, int chunk) {
  engine::Scenario s;
  s.name = "cpu-engine";
  for (int i = 0; i < nodes; ++i) s.nodes.push_back({"n" + std::to_string(i), "m3-ultra-512gb"});
  s.fabric.type = engine::FabricType::kFullMesh;
  s.fabric.link = "tb5-tcp";
  for (int a = 0; a < nodes; ++a)
    for (int b = a + 1; b < nodes; ++b) s.fabric.cables.push_back({a, b, 0, 0, "tb5-tcp"});
  s.model_dir = model_dir;
  s.model_card = engine::load_model_card(model_dir);
  s.model = s.model_card->name;
  s.quant = s.model_card->quantizations.at(0).name;
  s.workload.requests = requests;
  s.workload.prompt_tokens.value = prompt;
  s.workload.output_tokens.value = output;
  s.workload.concurrency = concurrency;
  s.workload.prefill_chunk = chunk;
  return s;
}

engine::RunResult run_cpu_engine(engine::Runtime& rt, const engine::Scenario& s, engine::Strategy strategy) {
  const engine::Catalog catalog = engine::catalog_for(s, engine::Catalog::builtin());
  const engine::Plan plan = engine::make_plan(s, catalog, strategy);
  const auto profile = engine::StackProfile::load(catalog.dir(), s.profile);
  engine::EngineSetup setup{s, catalog, plan, profile, engine::make_requests(s.workload, s.seed), {}, {}};
  setup.backend = engine::cpu_backends(s.model_dir, false);
  engine::Liveness liveness(rt.world(), s.heartbeat_s, 1e9);
  engine::RunResult result;
  result.nodes.resize(rt.world());
  engine::run_node(rt, liveness, setup, result);
  engine::finish_run(result, rt.now());
  return result;
}

std::string output_ids(const engine::RunResult& r) {
  std::vector<std::string> requests;
  for (const auto& rec : r.requests) requests.push_back(fmt::format("{}", fmt::join(rec.output_ids, " ")));
  return fmt::format("{}", fmt::join(requests, ";"));
}

}  // namespace testsupport
