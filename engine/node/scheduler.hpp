// Rank 0's continuous-batching scheduler: admits requests against the KV
// capacity, builds each step (one decode token per running request plus at
// most one prefill chunk), and records every token's time.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/input/workload.hpp"
#include "engine/plan/cost_model.hpp"

namespace engine {

struct Slot {
  int request = 0;
  int tokens = 0;          // 1 for decode, the chunk for prefill
  int context_before = 0;  // tokens already cached for this request
  bool prefill = false;
  bool emits = false;             // produces a token this step (decode, or the prompt's last chunk)
  std::vector<std::int32_t> ids;  // the tokens' ids when the run computes real tokens; else empty
};

struct StepPlan {
  std::vector<Slot> slots;
  StepShape shape() const;
  std::vector<std::byte> serialize() const;
  static StepPlan deserialize(std::span<const std::byte> bytes);
};

struct RequestRecord {
  Request request;
  double arrival_s = -1, first_token_s = -1, finish_s = -1;
  std::vector<double> token_times;
  std::vector<int> output_ids;  // the tokens produced, when the run computes them
  std::string error;            // empty when the request completed
  int tries = 1;                // the client's sends of this request id
  double retry_s = -1;          // when the client's latest retry arrives
  bool done() const { return finish_s >= 0 || !error.empty(); }
};

struct StepRecord {
  double start_s = 0, end_s = 0;
  int decode_tokens = 0, prefill_tokens = 0;
};

class Scheduler {
 public:
  Scheduler(std::vector<Request> requests, const Workload& w, double kv_capacity_tokens);

  // The next step to run at `now`; nullopt when there is nothing to run yet.
  std::optional<StepPlan> next(double now);
  // When idle: the time the next request arrives (negative: none will).
  double next_arrival() const;
  void complete(const StepPlan& step, double start_s, double end_s);
  // Ends every unfinished request with `error` (for example a lost instance).
  void fail_all(double now, const std::string& error);
  // After the instance was re-placed at `now`: every running request was cut
  // off by `cause`; its client retries it with the same id after the backoff,
  // and it resumes by prefilling its prompt and the tokens it already produced
  // (a client out of tries gives up). The KV capacity is the new plan's.
  // Returns the tokens to recompute.
  long requeue_in_flight(double kv_capacity_tokens, double now, const std::string& cause);
  bool finished() const;

  // Real tokens (a backend that computes them): every step carries the ids
  // it processes, from `prompts` (by request) and the tokens produced since.
  void use_token_ids(std::vector<std::vector<int>> prompts);
  // What `step` sampled: one id per emitting slot, in slot order. Call before complete().
  void record_tokens(const StepPlan& step, std::span<const int> sampled);

  const std::vector<RequestRecord>& records() const { return records_; }
  const std::vector<StepRecord>& steps() const { return steps_; }

 private:
  void admit(double now);
  void release_next(double now);

  Workload workload_;
  double kv_capacity_;
  double kv_reserved_ = 0;
  std::vector<RequestRecord> records_;
  std::vector<int> running_;         // admitted, in admission order
  std::vector<int> cached_;          // tokens in KV per request
  std::vector<int> prefill_target_;  // tokens to prefill before decoding: the prompt, plus
                                     // after a re-placement the tokens already produced
  std::vector<StepRecord> steps_;
  int next_closed_ = 0;                       // next closed-loop request not yet released
  std::vector<std::vector<int>> prompt_ids_;  // empty: token counts only
};

}  // namespace engine
