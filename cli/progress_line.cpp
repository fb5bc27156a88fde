#include "cli/progress_line.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace cli {

ProgressLine::ProgressLine(std::string what) : what_(std::move(what)), terminal_(::isatty(STDERR_FILENO) == 1) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::finish() {
  if (terminal_ && shown_) std::fputs("\r\033[K", stderr);
  shown_ = false;
}

void ProgressLine::show(const std::string& text, bool last) {
  const auto now = Clock::now();
  const auto every = terminal_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(10000);
  if (now - shown_at_ < every && !(terminal_ && last)) return;
  shown_at_ = now;
  shown_ = true;
  if (terminal_)
    fmt::print(stderr, "\r\033[K{}: {}", what_, text);
  else
    fmt::print(stderr, "{}: {}\n", what_, text);
  std::fflush(stderr);
}

StudyProgress::StudyProgress(std::string what)
    : line_(std::move(what)), reporting_([this](int done, int items) { update(done, items); }) {}

void StudyProgress::update(int done, int items) {
  const auto now = std::chrono::steady_clock::now();
  if (done == 0) {
    ++batches_;
    batch_start_ = now;
    last_done_ = 0;
    return;
  }
  simulations_ += done - last_done_;
  last_done_ = done;
  std::string text = fmt::format("{} of {} simulations", done, items);
  if (batches_ > 1) text += fmt::format(" (batch {}; {} simulations so far)", batches_, simulations_);
  text += fmt::format(", {:.0f} s", line_.seconds());
  if (done < items) {
    const double batch_s = std::chrono::duration<double>(now - batch_start_).count();
    text +=
        fmt::format(", about {:.0f} s left{}", batch_s * (items - done) / done, batches_ > 1 ? " in this batch" : "");
  }
  line_.show(text, done == items);
}

}  // namespace cli
