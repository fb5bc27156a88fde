#include "cli/workload_flags.hpp"

#include "engine/base/error.hpp"

namespace cli {

void WorkloadFlags::add_to(CLI::App* cmd) {
  cmd->add_option("--requests", requests, "this many requests instead of the scenario's")->check(CLI::Range(1, 1000000));
  cmd->add_option("--prompt-tokens", prompt_tokens, "every prompt this long instead")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--output-tokens", output_tokens, "every output this long instead")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--concurrency", concurrency, "this many requests in flight (closed loop)")
      ->check(CLI::Range(1, 100000));
}

void WorkloadFlags::apply(engine::Workload& w) const {
  if (w.arrival == "trace" && (prompt_tokens > 0 || output_tokens > 0 || requests > 0))
    throw engine::InputError(prompt_tokens > 0 ? "--prompt-tokens" : output_tokens > 0 ? "--output-tokens" : "--requests",
                             "", "the scenario replays a request trace: its requests keep their logged sizes");
  if (concurrency > 0 && w.arrival != "closed")
    throw engine::InputError("--concurrency", "", "the scenario's requests arrive " + w.arrival +
                                                      ", not in a closed loop with a concurrency");
  const auto fixed = [](engine::Distribution& d, int tokens) {
    if (tokens <= 0) return;
    d = engine::Distribution{};
    d.value = tokens;
  };
  if (requests > 0) w.requests = requests;
  fixed(w.prompt_tokens, prompt_tokens);
  fixed(w.output_tokens, output_tokens);
  if (concurrency > 0) w.concurrency = concurrency;
}

}  // namespace cli
