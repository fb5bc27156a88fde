// What a long command shows while it works, on stderr: on a terminal one line
// that updates in place and is erased at the end; elsewhere (a log, CI) a
// line every 10 s at most, so a short run prints none.
#pragma once

#include <chrono>
#include <string>

#include "sim/studies/worker_pool.hpp"

namespace cli {

class ProgressLine {
 public:
  // `what`: the command ("plan"), which every line starts with.
  explicit ProgressLine(std::string what);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Shows `text` unless the last line is too recent; `last`: the last of a
  // stretch of work, shown on a terminal whatever the time.
  void show(const std::string& text, bool last = false);
  // Erases the line on a terminal, so what follows starts clean (the destructor does too).
  void finish();
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  std::string what_;
  bool terminal_;
  Clock::time_point start_ = Clock::now(), shown_at_ = Clock::now();
  bool shown_ = false;
};

// A ProgressLine for a study (plan, chaos, calibrate): the simulations of
// every batch of sim::run_parallel this process runs while it lives.
class StudyProgress {
 public:
  explicit StudyProgress(std::string what);

 private:
  void update(int done, int items);

  ProgressLine line_;
  std::chrono::steady_clock::time_point batch_start_ = std::chrono::steady_clock::now();
  long simulations_ = 0;  // ended, over every batch
  int batches_ = 0, last_done_ = 0;
  sim::ReportProgress reporting_;  // last: it reports into the members above
};

}  // namespace cli
