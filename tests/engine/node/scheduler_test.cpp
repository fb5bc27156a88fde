// The client's retries: an interrupted request resumes under its own id.
#include "engine/node/scheduler.hpp"

#include <gtest/gtest.h>

namespace {

using engine::Scheduler;

engine::Workload workload(int max_tries) {
  engine::Workload w;
  w.requests = 1;
  w.max_tries = max_tries;
  w.retry_backoff_s = 0.5;
  return w;
}

// Runs steps at one per 10 ms from `t` until `tokens` were emitted in all.
double decode(Scheduler& s, double t, int tokens) {
  while (s.records()[0].token_times.size() < static_cast<std::size_t>(tokens)) {
    auto step = s.next(t);
    if (!step) {
      t = s.next_arrival();
      continue;
    }
    s.complete(*step, t, t + 0.01);
    t += 0.01;
  }
  return t;
}

TEST(Scheduler, AnInterruptedRequestResumesAfterTheBackoffWithEveryTokenOnce) {
  Scheduler s({{0, 100, 10, 0.0}}, workload(3), 1e6);
  double t = decode(s, 0, 4);
  // Prompt plus the three tokens already consumed as inputs: the fourth is the next input.
  EXPECT_EQ(s.requeue_in_flight(1e6, t, "node lost"), 100 + 3);
  EXPECT_FALSE(s.next(t).has_value()) << "the client retries only after its backoff";
  EXPECT_DOUBLE_EQ(s.next_arrival(), t + 0.5);
  const auto rebuild = s.next(t + 0.5);
  ASSERT_TRUE(rebuild.has_value());
  EXPECT_TRUE(rebuild->slots[0].prefill);
  EXPECT_FALSE(rebuild->slots[0].emits) << "that token was already produced";
  decode(s, t + 0.5, 10);
  const auto& rec = s.records()[0];
  EXPECT_EQ(rec.tries, 2);
  EXPECT_TRUE(rec.error.empty());
  EXPECT_EQ(rec.token_times.size(), 10u);
  EXPECT_TRUE(s.finished());
}

TEST(Scheduler, AClientOutOfTriesGivesUpWithTheCause) {
  Scheduler s({{0, 100, 10, 0.0}}, workload(1), 1e6);
  const double t = decode(s, 0, 2);
  EXPECT_EQ(s.requeue_in_flight(1e6, t, "node lost"), 0);
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.records()[0].error, "the client gave up after 1 tries: node lost");
}

}  // namespace
