// The engine's only window on the world (time, messages, failures), like
// LevelDB's Env. SimRuntime implements it on SimGrid, TcpRuntime on sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace engine {

// Leaves the elements that a resize adds uninitialized: a transport reads a
// payload into them, and zeroing them first would be one more pass over memory.
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Bytes = std::vector<std::byte, UninitializedAllocator<std::byte>>;

// A message. `size` is what the network carries; `bytes` is optional real
// content (empty for size-only payloads, as a 235B model moves in sim).
// REQUIRES: bytes.empty() || bytes.size() == size.
struct Payload {
  std::uint64_t size = 0;
  Bytes bytes;
  double sent_s = -1;  // when the sender handed it over (metering; sim only, not sent on a wire)

  static Payload sized(std::uint64_t n) { return Payload{n, {}}; }
  static Payload of(std::span<const std::byte> data) {
    Bytes bytes(data.size());  // then one memcpy: a range constructor would copy byte by byte
    if (!data.empty()) std::memcpy(bytes.data(), data.data(), data.size());
    return Payload{data.size(), std::move(bytes)};
  }
};

// A collective's messages from one rank, phase by phase (a phase sends, then
// waits for what it receives), handed over whole so that the simulator's flow
// level can time them in one go instead of sending each.
struct FlowPhase {
  std::vector<std::pair<int, std::uint64_t>> sends;  // (destination, bytes), in send order
  std::vector<int> receives;                         // sources
};
struct Flows {
  int tag = 0;
  std::vector<int> members;  // every rank that takes part, this one included
  std::vector<FlowPhase> phases;
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  virtual int rank() const = 0;
  virtual int world() const = 0;
  // Seconds since the start of the run (simulated or real).
  virtual double now() const = 0;
  virtual void sleep_for(double seconds) = 0;
  // Spends `seconds` of this node's compute at full speed; a throttled node
  // takes longer. The default is a plain sleep (real hardware throttles itself).
  virtual void compute(double seconds) { sleep_for(seconds); }
  // Moves this caller's traffic to the node's secondary network (for example
  // 10 GbE when the Thunderbolt fabric is gone). False when there is none.
  virtual bool use_secondary_network() { return false; }
  // From now on, messages to `dst` take a two-hop detour through `relay`,
  // which forwards them in order (a dead cable in a full mesh). False when the
  // transport cannot relay or `relay` is not cabled to both ends.
  virtual bool route_via(int /*dst*/, int /*relay*/) { return false; }
  // Whether route_via can work on this transport at all.
  virtual bool can_relay() const { return false; }

  // Eager, non-blocking: returns once the payload is handed to the transport.
  // Messages from one sender to one receiver arrive in order.
  // Throws PeerFailure when `dst` is known to be unreachable.
  virtual void send(int dst, int tag, Payload payload) = 0;

  // Next message from `src` with `tag`; messages with other tags are kept for
  // later calls. Throws Timeout after `timeout_s`, PeerFailure if `src` died.
  virtual Payload recv(int src, int tag, double timeout_s) = 0;

  // Whether run_flows can time a collective as a whole (the simulator at its
  // flow level); otherwise collectives send message by message.
  virtual bool times_flows() const { return false; }
  // Blocks until this rank's part of `flows` would be done, had its messages
  // been sent; every member passes its own part of the same collective.
  // Returns the seconds it waited for the last member to arrive. Throws as
  // recv does: Timeout after `timeout_s` (calling again resumes the same
  // wait), PeerFailure. REQUIRES: times_flows().
  virtual double run_flows(const Flows& flows, double timeout_s) {
    (void)flows, (void)timeout_s;
    throw std::logic_error("this runtime sends collectives message by message");
  }

  // Drops the messages waiting for this caller whose tag `stale` says nobody
  // will ask for again (an epoch's, once it is over). Default: keeps them.
  virtual void drop_waiting(const std::function<bool(int tag)>& stale) { (void)stale; }

  // `peer` is gone for good, as its silence told (a machine without power
  // closes no connection): sends to it fail from now on, and closing this
  // runtime does not wait on it. Default: nothing waits on a peer.
  virtual void give_up(int peer, const std::string& why) { (void)peer, (void)why; }
};

// A Runtime that passes every call on to another; decorators (metering,
// epoch fencing) override only what they change.
class ForwardingRuntime : public Runtime {
 public:
  explicit ForwardingRuntime(Runtime& inner) : inner_(inner) {}

  int rank() const override { return inner_.rank(); }
  int world() const override { return inner_.world(); }
  double now() const override { return inner_.now(); }
  void sleep_for(double seconds) override { inner_.sleep_for(seconds); }
  void compute(double seconds) override { inner_.compute(seconds); }
  bool use_secondary_network() override { return inner_.use_secondary_network(); }
  bool route_via(int dst, int relay) override { return inner_.route_via(dst, relay); }
  bool can_relay() const override { return inner_.can_relay(); }
  void send(int dst, int tag, Payload payload) override { inner_.send(dst, tag, std::move(payload)); }
  Payload recv(int src, int tag, double timeout_s) override { return inner_.recv(src, tag, timeout_s); }
  bool times_flows() const override { return inner_.times_flows(); }
  double run_flows(const Flows& flows, double timeout_s) override { return inner_.run_flows(flows, timeout_s); }
  void drop_waiting(const std::function<bool(int tag)>& stale) override { inner_.drop_waiting(stale); }
  void give_up(int peer, const std::string& why) override { inner_.give_up(peer, why); }

 protected:
  Runtime& inner_;
};

}  // namespace engine
