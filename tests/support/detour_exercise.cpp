#include "support/detour_exercise.hpp"

#include <chrono>
#include <thread>
#include <vector>

#include "engine/base/error.hpp"

namespace testsupport {

namespace {

constexpr int kTag = 7, kAnswer = 8, kMessages = 64;

engine::Payload pattern(std::size_t n) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>(i * 131 % 251);
  return engine::Payload::of(bytes);
}

engine::Payload message(int i) {
  return i % 3 == 0 ? engine::Payload::sized(std::uint64_t(i) << 14) : pattern((1 << 20) / (i + 1));
}

}  // namespace

std::string exercise_detour(engine::Runtime& rt) {
  if (rt.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(1));  // no progress: nothing is forwarded
    rt.sleep_for(2);
    try {
      rt.recv(0, kTag, 0);
      return "a forwarded message stayed at the relay";
    } catch (const engine::Timeout&) {
      return "relayed";
    } catch (const engine::PeerFailure&) {  // rank 0 is done and gone: nothing waited either
      return "relayed";
    }
  }
  const int other = 2 - rt.rank();
  if (rt.route_via(other, rt.rank()) || rt.route_via(other, other) || !rt.route_via(other, 1))
    return "route_via took a detour through an end";
  if (rt.rank() == 0) {
    rt.sleep_for(0.2);  // past the barrier: the relay's last read then held nothing to forward
    for (int i = 0; i < kMessages; ++i) rt.send(2, kTag, message(i));
    return rt.recv(2, kAnswer, 30).bytes == pattern(77).bytes ? "answered" : "answer corrupt";
  }
  try {
    rt.recv(0, kTag, 0.3);
    return "arrived while the relay stood still";
  } catch (const engine::Timeout&) {
  }
  for (int i = 0; i < kMessages; ++i) {
    const engine::Payload got = rt.recv(0, kTag, 30);
    if (got.size != message(i).size || got.bytes != message(i).bytes) return "message " + std::to_string(i);
  }
  rt.send(0, kAnswer, pattern(77));
  return "all";
}

}  // namespace testsupport
