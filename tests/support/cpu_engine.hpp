// The engine with CpuBackend on a real runtime, in-process: what a node of a
// real cluster runs, without heartbeats or faults (the liveness table never
// suspects anyone), for token-equality tests and the decode benchmark.
#pragma once

#include <string>

#include "engine/base/runtime.hpp"
#include "engine/input/scenario.hpp"
#include "engine/node/run_result.hpp"

namespace testsupport {

// A scenario of `nodes` M3 Ultras in a tb5-tcp full mesh running the model
// directory `model_dir`: `requests` requests of `prompt` and `output` tokens,
// `concurrency` at a time, prefilled in chunks of `chunk`.
engine::Scenario cpu_scenario(const std::string& model_dir, int nodes, int requests, int prompt, int output,
                              int concurrency, int chunk);

// Runs rank rt.rank() of `s` placed by `strategy` to the end of its
// workload; rank 0's result holds the requests (with their token ids).
engine::RunResult run_cpu_engine(engine::Runtime& rt, const engine::Scenario& s, engine::Strategy strategy);

// "id id id;id id id" — each request's output ids.
std::string output_ids(const engine::RunResult& r);

}  // namespace testsupport
