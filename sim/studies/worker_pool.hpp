// Runs many independent simulations on several cores: `jobs` worker
// processes share the items, and each item runs in its own child (SimGrid
// allows one engine per process). Results come back in item order, so the
// output does not depend on the job count.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sim/child_run.hpp"

namespace sim {

std::vector<ChildResult> run_parallel(int items, int jobs, const std::function<std::string(int)>& fn);

// Told how a batch of run_parallel goes: (0, items) as it starts, then
// (done, items) as each item ends, in this process.
using ProgressFn = std::function<void(int done, int items)>;
// While it lives, every run_parallel of this process reports to `fn`: what a
// command shows as its progress line, however deep in a study the work runs.
class ReportProgress {
 public:
  explicit ReportProgress(ProgressFn fn);
  ~ReportProgress();
  ReportProgress(const ReportProgress&) = delete;
  ReportProgress& operator=(const ReportProgress&) = delete;

 private:
  ProgressFn previous_;
};

// One share of a study spread over machines: shard `index` of `count` runs
// items index, index + count, index + 2 count, ...
struct Shard {
  int index = 0, count = 1;
  bool owns(int item) const { return item % count == index; }
};

// What one shard ran: its share of the study's `items`, by item.
struct ShardRun {
  int items = 0;
  std::vector<std::pair<int, ChildResult>> results;
};

// Where a study's items run: on `jobs` local workers, only this shard's share
// of them, or nowhere when `meshinfer merge` already holds every result.
struct Workers {
  int jobs = 1;
  Shard shard;
  const std::vector<ChildResult>* merged = nullptr;     // one result per item, from the shards
  ShardRun* ran = nullptr;                              // receives what this shard ran
};

// run_parallel over the items `w` says to run; the others hold an error that
// says which shard has them.
std::vector<ChildResult> run_items(int items, const Workers& w, const std::function<std::string(int)>& fn);

}  // namespace sim
