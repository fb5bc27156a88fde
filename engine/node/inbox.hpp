// Messages that arrived before anyone asked for them, by sender and tag: the
// one queue behind every Runtime::recv (SimRuntime, TcpRuntime, VerbsRuntime).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <utility>

#include "engine/base/runtime.hpp"

namespace engine {

// Every arrival comes in through put() and leaves through take(); nothing
// else reaches the queues. So what may wait here (a byte limit per sender,
// tags of epochs the receiver has left) is decided in this class alone, not
// in the transports that fill it. Not thread-safe: one runtime, one caller.
class Inbox {
 public:
  // The real bytes (Payload::bytes; a size-only payload holds none) that may
  // wait from one sender: a sender past it is failed by its transport rather
  // than followed into memory.
  static constexpr std::uint64_t kDefaultMaxBytesPerSender = std::uint64_t{2} << 30;

  explicit Inbox(std::uint64_t max_bytes_per_sender = kDefaultMaxBytesPerSender)
      : max_bytes_per_sender_(max_bytes_per_sender) {}

  // Queues `payload` behind the earlier ones from `src` with `tag`. False, and
  // nothing queued, when more than the limit would then wait from `src`.
  bool put(int src, int tag, Payload payload);
  // The oldest payload from `src` with `tag`; nothing when none waits.
  std::optional<Payload> take(int src, int tag);
  // Drops every payload whose tag `stale(tag)` holds; returns how many, by sender.
  std::map<int, std::size_t> drop_if(const std::function<bool(int tag)>& stale);
  // The real bytes waiting from `src`.
  std::uint64_t waiting_bytes(int src) const {
    const auto it = waiting_bytes_.find(src);
    return it == waiting_bytes_.end() ? 0 : it->second;
  }
  // Whether take(src, tag) would return a payload.
  bool holds(int src, int tag) const { return queues_.contains({src, tag}); }

 private:
  std::uint64_t max_bytes_per_sender_;
  // (src, tag) -> payloads, oldest first; a key is erased with its last payload.
  std::map<std::pair<int, int>, std::deque<Payload>> queues_;
  std::map<int, std::uint64_t> waiting_bytes_;  // by sender
};

}  // namespace engine
