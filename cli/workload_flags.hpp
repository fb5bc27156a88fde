// --requests, --prompt-tokens, --output-tokens and --concurrency: a
// scenario's workload changed from the command line, for a one-off question
// or a shortened campaign, without editing the file.
#pragma once

#include <CLI/CLI.hpp>

#include "engine/input/scenario.hpp"

namespace cli {

struct WorkloadFlags {
  int requests = 0, prompt_tokens = 0, output_tokens = 0, concurrency = 0;  // 0: as the scenario says

  void add_to(CLI::App* cmd);
  // Throws InputError for a size given to a replayed trace, or a concurrency to an open loop.
  void apply(engine::Workload& w) const;
};

}  // namespace cli
