#include "engine/node/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace engine {

StepShape StepPlan::shape() const {
  StepShape s;
  for (const Slot& slot : slots) {
    const double c = slot.context_before, t = slot.tokens;
    s.tokens += slot.tokens;
    s.sequences += 1;
    s.attended += t * c + t * (t + 1) / 2;  // token i of the chunk sees c + i cached tokens
    s.kv_read_tokens += c + t;
    s.logits += slot.emits ? 1 : 0;
  }
  return s;
}

// Per slot: request, tokens, context_before, flags (1 prefill, 2 emits, 4 ids
// follow), then `tokens` ids when flagged.
std::vector<std::byte> StepPlan::serialize() const {
  std::vector<std::int32_t> words;
  for (const Slot& s : slots) {
    words.insert(words.end(),
                 {s.request, s.tokens, s.context_before, s.prefill | (s.emits << 1) | (!s.ids.empty() << 2)});
    words.insert(words.end(), s.ids.begin(), s.ids.end());
  }
  std::vector<std::byte> out(words.size() * sizeof(std::int32_t));
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

StepPlan StepPlan::deserialize(std::span<const std::byte> bytes) {
  if (bytes.size() % sizeof(std::int32_t) != 0) throw std::runtime_error("malformed step message");
  std::vector<std::int32_t> words(bytes.size() / sizeof(std::int32_t));
  std::memcpy(words.data(), bytes.data(), bytes.size());
  StepPlan p;
  for (std::size_t i = 0; i < words.size();) {
    if (words.size() - i < 4) throw std::runtime_error("malformed step message");
    Slot slot{words[i], words[i + 1], words[i + 2], (words[i + 3] & 1) != 0, (words[i + 3] & 2) != 0, {}};
    const bool has_ids = (words[i + 3] & 4) != 0;
    i += 4;
    if (has_ids) {
      if (slot.tokens < 0 || words.size() - i < static_cast<std::size_t>(slot.tokens))
        throw std::runtime_error("malformed step message");
      slot.ids.assign(words.begin() + i, words.begin() + i + slot.tokens);
      i += slot.tokens;
    }
    p.slots.push_back(std::move(slot));
  }
  return p;
}

Scheduler::Scheduler(std::vector<Request> requests, const Workload& w, double kv_capacity_tokens)
    : workload_(w), kv_capacity_(kv_capacity_tokens), cached_(requests.size(), 0) {
  for (const Request& r : requests) prefill_target_.push_back(r.prompt_tokens);
  for (const Request& r : requests) {
    RequestRecord rec;
    rec.request = r;
    rec.arrival_s = r.arrival_s;
    records_.push_back(rec);
  }
  next_closed_ =
      w.arrival == "closed" ? std::min<int>(w.concurrency, records_.size()) : static_cast<int>(records_.size());
}

void Scheduler::release_next(double now) {
  if (next_closed_ < static_cast<int>(records_.size())) records_[next_closed_++].arrival_s = now;
}

void Scheduler::admit(double now) {
  for (RequestRecord& rec : records_) {
    const int id = rec.request.id;
    if (rec.done() || rec.arrival_s < 0 || std::max(rec.arrival_s, rec.retry_s) > now) continue;
    if (std::find(running_.begin(), running_.end(), id) != running_.end()) continue;
    const double need = rec.request.prompt_tokens + rec.request.output_tokens;
    if (need > kv_capacity_) {
      rec.error = fmt::format("refused: needs {:.0f} tokens of KV cache, the plan holds {:.0f}", need, kv_capacity_);
      release_next(now);
      continue;
    }
    // First come, first served: a request that does not fit yet blocks later ones.
    if (static_cast<int>(running_.size()) >= workload_.max_batch || kv_reserved_ + need > kv_capacity_) return;
    kv_reserved_ += need;
    running_.push_back(id);
  }
}

std::optional<StepPlan> Scheduler::next(double now) {
  admit(now);
  if (running_.empty()) return std::nullopt;
  StepPlan plan;
  for (int id : running_)
    if (cached_[id] >= prefill_target_[id]) plan.slots.push_back(Slot{id, 1, cached_[id], false, true, {}});
  for (int id : running_) {
    if (cached_[id] < prefill_target_[id]) {
      const int chunk = std::min(workload_.prefill_chunk, prefill_target_[id] - cached_[id]);
      // A rebuilt cache's last chunk emits nothing: that token was produced before the failure.
      const bool emits = cached_[id] + chunk == prefill_target_[id] && records_[id].token_times.empty();
      plan.slots.push_back(Slot{id, chunk, cached_[id], true, emits, {}});
      break;
    }
  }
  if (!prompt_ids_.empty()) {
    for (Slot& slot : plan.slots) {
      // The sequence so far is the prompt, then the tokens produced.
      const std::vector<int>& prompt = prompt_ids_[slot.request];
      const std::vector<int>& produced = records_[slot.request].output_ids;
      for (int pos = slot.context_before; pos < slot.context_before + slot.tokens; ++pos)
        slot.ids.push_back(pos < static_cast<int>(prompt.size()) ? prompt[pos] : produced.at(pos - prompt.size()));
    }
  }
  return plan;
}

double Scheduler::next_arrival() const {
  double best = -1;
  for (const RequestRecord& rec : records_)
    if (!rec.done() && rec.arrival_s >= 0 &&
        std::find(running_.begin(), running_.end(), rec.request.id) == running_.end()) {
      const double ready = std::max(rec.arrival_s, rec.retry_s);
      best = best < 0 ? ready : std::min(best, ready);
    }
  return best;
}

void Scheduler::complete(const StepPlan& step, double start_s, double end_s) {
  StepRecord sr{start_s, end_s, 0, 0};
  for (const Slot& slot : step.slots) {
    (slot.prefill ? sr.prefill_tokens : sr.decode_tokens) += slot.tokens;
    cached_[slot.request] += slot.tokens;
    RequestRecord& rec = records_[slot.request];
    if (!slot.emits) continue;
    rec.token_times.push_back(end_s);
    if (rec.first_token_s < 0) rec.first_token_s = end_s;
    if (static_cast<int>(rec.token_times.size()) == rec.request.output_tokens) {
      rec.finish_s = end_s;
      kv_reserved_ -= rec.request.prompt_tokens + rec.request.output_tokens;
      running_.erase(std::find(running_.begin(), running_.end(), slot.request));
      release_next(end_s);
    }
  }
  steps_.push_back(sr);
}

void Scheduler::fail_all(double now, const std::string& error) {
  for (RequestRecord& rec : records_)
    if (!rec.done()) {
      rec.error = error;
      if (rec.arrival_s < 0) rec.arrival_s = now;
    }
  running_.clear();
  kv_reserved_ = 0;
}

long Scheduler::requeue_in_flight(double kv_capacity_tokens, double now, const std::string& cause) {
  kv_capacity_ = kv_capacity_tokens;
  long recomputed = 0;
  for (int id : running_) {
    RequestRecord& rec = records_[id];
    cached_[id] = 0;
    if (++rec.tries > workload_.max_tries) {
      rec.error = fmt::format("the client gave up after {} tries: {}", workload_.max_tries, cause);
      release_next(now);
      continue;
    }
    // Same id: the request resumes where it was, so no token is produced twice.
    rec.retry_s = now + workload_.retry_backoff_s;
    const int produced = static_cast<int>(rec.token_times.size());
    // The last token produced is the next decode step's input, not yet cached.
    prefill_target_[id] = rec.request.prompt_tokens + std::max(0, produced - 1);
    recomputed += prefill_target_[id];
  }
  // Retried requests are admitted again, against the new plan's capacity.
  running_.clear();
  kv_reserved_ = 0;
  return recomputed;
}

void Scheduler::use_token_ids(std::vector<std::vector<int>> prompts) {
  for (const RequestRecord& rec : records_)
    if (static_cast<int>(prompts.at(rec.request.id).size()) != rec.request.prompt_tokens)
      throw std::invalid_argument(fmt::format("request {}: {} prompt ids for {} prompt tokens", rec.request.id,
                                              prompts[rec.request.id].size(), rec.request.prompt_tokens));
  prompt_ids_ = std::move(prompts);
}

void Scheduler::record_tokens(const StepPlan& step, std::span<const int> sampled) {
  const auto emitting = std::count_if(step.slots.begin(), step.slots.end(), [](const Slot& s) { return s.emits; });
  if (static_cast<std::size_t>(emitting) != sampled.size())
    throw std::logic_error("record_tokens: one sampled id per emitting slot expected");
  std::size_t next = 0;
  for (const Slot& slot : step.slots)
    if (slot.emits) records_[slot.request].output_ids.push_back(sampled[next++]);
}

bool Scheduler::finished() const {
  return std::all_of(records_.begin(), records_.end(), [](const RequestRecord& r) { return r.done(); });
}

}  // namespace engine
