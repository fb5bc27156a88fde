// Messages that arrived before anyone asked for them, by sender and tag: the
// one queue behind every Runtime::recv (SimRuntime, TcpRuntime, VerbsRuntime).
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <utility>

#include "engine/runtime.hpp"

namespace engine {

// Every arrival comes in through put() and leaves through take(); nothing
// else reaches the queues. So what may wait here (a byte limit per sender,
// tags of epochs the receiver has left) is decided in this class alone, not
// in the transports that fill it. Not thread-safe: one runtime, one caller.
class Inbox {
 public:
  // Queues `payload` behind the earlier ones from `src` with `tag`.
  void put(int src, int tag, Payload payload);
  // The oldest payload from `src` with `tag`; nothing when none waits.
  std::optional<Payload> take(int src, int tag);
  // Whether take(src, tag) would return a payload.
  bool holds(int src, int tag) const { return queues_.contains({src, tag}); }

 private:
  // (src, tag) -> payloads, oldest first; a key is erased with its last payload.
  std::map<std::pair<int, int>, std::deque<Payload>> queues_;
};

}  // namespace engine
