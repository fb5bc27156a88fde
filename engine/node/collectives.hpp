// Collectives written once on Runtime::send/recv: the algorithm SimGrid times
// is the one that runs on the cable. Reductions sum floats in a fixed order,
// so results are bitwise identical on every runtime and every rank.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "engine/base/runtime.hpp"

namespace engine {

// What a collective moves: real floats, or only a size (elements x bytes each)
// when the simulator replays a model too large to compute.
class CollectiveBuffer {
 public:
  static CollectiveBuffer real(std::span<float> data) { return CollectiveBuffer(data, data.size(), sizeof(float)); }
  static CollectiveBuffer sized(std::uint64_t elements, int bytes_per_element) {
    return CollectiveBuffer({}, elements, bytes_per_element);
  }

  std::uint64_t elements() const { return elements_; }
  std::uint64_t bytes() const { return elements_ * element_bytes_; }
  bool is_real() const { return !data_.empty(); }

  Payload pack(std::uint64_t begin, std::uint64_t count) const;
  void assign(std::uint64_t begin, const Payload& p);
  // Element-wise sum of `parts` (in the given order) into [begin, begin+count).
  // A null part stands for this buffer's own values there, unpacked.
  // REQUIRES: no other part views this buffer's memory (pack() copies).
  void assign_sum(std::uint64_t begin, std::uint64_t count, std::span<const Payload* const> parts);
  // Adds this buffer's values at [begin, begin+count) to `p`'s in place: `p`
  // then holds what assign_sum({&p, null}) would write here, bit for bit.
  void add_own_to(std::uint64_t begin, std::uint64_t count, Payload& p) const;
  // The message to send [begin, begin+count) in, given `received`, which holds
  // those elements: `received` itself when the buffer is real (no copy), else a
  // size-only one (the flow level's recorder receives nothing).
  Payload pass_on(Payload received, std::uint64_t begin, std::uint64_t count) const;

 private:
  CollectiveBuffer(std::span<float> d, std::uint64_t n, int eb) : data_(d), elements_(n), element_bytes_(eb) {}
  std::span<float> data_;
  std::uint64_t elements_;
  int element_bytes_;
};

enum class AllReduceAlgorithm { kRing, kOneShot, kTwoShot };
std::string_view name(AllReduceAlgorithm a);

// Every rank calls each collective with the same arguments. `tag` separates
// concurrent collectives; `timeout_s` bounds every receive (Timeout/PeerFailure).
struct CollectiveContext {
  Runtime& rt;
  int tag;
  double timeout_s;
};

void all_reduce(const CollectiveContext& c, CollectiveBuffer& buf, AllReduceAlgorithm algo);
// Each rank contributes the block [rank*elements/world, (rank+1)*elements/world).
void all_gather(const CollectiveContext& c, CollectiveBuffer& buf);
void broadcast(const CollectiveContext& c, CollectiveBuffer& buf, int root);
// Block j of the sender goes to rank j; afterwards block j holds what rank j sent.
void all_to_all(const CollectiveContext& c, CollectiveBuffer& buf);

// Closed-form idle-network cost (seconds) of an all-reduce of `bytes` over
// `n` ranks, where every pair has its own link of `bandwidth` bytes/s and
// `latency` s (a full mesh of cables; docs/reference-facts.md#collective-cost-models).
double all_reduce_cost(AllReduceAlgorithm a, int n, double bytes, double bandwidth, double latency);
// The cheapest algorithm by that cost; a ring when the mesh is not complete.
AllReduceAlgorithm choose_all_reduce(int n, double bytes, double bandwidth, double latency, bool full_mesh);

// Block b of `world` equal-as-possible blocks of `elements`: [begin, begin+count).
struct Block {
  std::uint64_t begin, count;
};
Block block_of(std::uint64_t elements, int world, int b);

}  // namespace engine
