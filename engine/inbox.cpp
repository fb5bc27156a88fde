#include "engine/inbox.hpp"

namespace engine {

bool Inbox::put(int src, int tag, Payload payload) {
  std::uint64_t& waiting = waiting_bytes_[src];
  if (payload.bytes.size() > max_bytes_per_sender_ - waiting) return false;
  waiting += payload.bytes.size();
  queues_[{src, tag}].push_back(std::move(payload));
  return true;
}

std::optional<Payload> Inbox::take(int src, int tag) {
  const auto queue = queues_.find({src, tag});
  if (queue == queues_.end()) return std::nullopt;
  Payload oldest = std::move(queue->second.front());
  queue->second.pop_front();
  if (queue->second.empty()) queues_.erase(queue);
  waiting_bytes_[src] -= oldest.bytes.size();
  return oldest;
}

}  // namespace engine
