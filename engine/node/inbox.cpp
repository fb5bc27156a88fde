#include "engine/node/inbox.hpp"

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

std::map<int, std::size_t> Inbox::drop_if(const std::function<bool(int tag)>& stale) {
  std::map<int, std::size_t> dropped;
  for (auto queue = queues_.begin(); queue != queues_.end();) {
    if (!stale(queue->first.second)) {
      ++queue;
      continue;
    }
    const int src = queue->first.first;
    for (const Payload& p : queue->second) waiting_bytes_[src] -= p.bytes.size();
    dropped[src] += queue->second.size();
    queue = queues_.erase(queue);
  }
  return dropped;
}

}  // namespace engine
