// Spreading a study (chaos, plan) over machines. `--shard K/N`, or the
// environment of the launcher that started this process, picks this process's
// share of the study's simulations; a shard writes their results to a shard
// file instead of the study's output, and `meshinfer merge` replays the
// recorded command on every shard's results: the bytes of a single run.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/studies/worker_pool.hpp"

namespace cli {

// The command line as typed, without the program name (main records it):
// shard files carry it so merge can replay it.
void set_command_line(std::vector<std::string> args);

// "K/N" with 0 <= K < N. `source` names the flag or variable in errors.
sim::Shard parse_shard(const std::string& text, const std::string& source);
// The share a launcher gave this process: MESHINFER_SHARD (K/N, as a CI matrix
// sets it), Slurm array jobs, Open MPI's mpirun, or a Kubernetes Indexed Job
// (JOB_COMPLETION_INDEX, with the count in MESHINFER_SHARD_COUNT).
// Nothing when none is set or the launcher started one process.
std::optional<sim::Shard> shard_from_environment(const std::function<const char*(const char*)>& getenv);

class StudyShare {
 public:
  void add_option(CLI::App* cmd);
  // How the study runs its items. REQUIRES: jobs > 0.
  sim::Workers workers(int jobs);
  // This process runs one share only; its output is a shard file.
  bool sharded() const { return shard_.count > 1; }
  // Writes what this shard ran to `path` and says so on stdout.
  void write(const std::string& path) const;
  // The shard file in the output directory `out`: out/shard-K-of-N.json.
  std::string file_in(const std::string& out) const;

 private:
  std::string flag_;
  sim::Shard shard_;
  sim::ShardRun ran_;
};

// Set by `meshinfer merge` while it replays a command: every item's result.
void set_merged_results(const std::vector<sim::ChildResult>* results);

}  // namespace cli
