#include "engine/inbox.hpp"

namespace engine {

void Inbox::put(int src, int tag, Payload payload) { queues_[{src, tag}].push_back(std::move(payload)); }

std::optional<Payload> Inbox::take(int src, int tag) {
  const auto queue = queues_.find({src, tag});
  if (queue == queues_.end()) return std::nullopt;
  Payload oldest = std::move(queue->second.front());
  queue->second.pop_front();
  if (queue->second.empty()) queues_.erase(queue);
  return oldest;
}

}  // namespace engine
