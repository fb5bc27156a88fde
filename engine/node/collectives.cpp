#include "engine/node/collectives.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace engine {

namespace {

const float* floats(const Payload& p) { return reinterpret_cast<const float*>(p.bytes.data()); }

void check_size(const Payload& p, std::uint64_t bytes) {
  if (p.size != bytes) throw std::runtime_error("collective: payload of unexpected size");
}

// The peer `step` places after `rank` (send order) and before it (receive order):
// every rank talks to a different peer at each step, spreading load over links.
int peer_after(int rank, int step, int n) { return (rank + step) % n; }
int peer_before(int rank, int step, int n) { return (rank - step + n) % n; }

// Stands in for the runtime while a collective runs at the flow level: it
// records the messages, phase by phase, that the algorithm would send.
class FlowRecorder : public Runtime {
 public:
  FlowRecorder(const Runtime& rt, int tag) : rank_(rt.rank()), world_(rt.world()) {
    flows_.tag = tag;
    flows_.members.resize(world_);
    std::iota(flows_.members.begin(), flows_.members.end(), 0);
  }
  const Flows& flows() const { return flows_; }

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  double now() const override { return 0; }
  void sleep_for(double) override {}
  // A send after a receive begins the next phase.
  void send(int dst, int, Payload payload) override {
    if (flows_.phases.empty() || !flows_.phases.back().receives.empty()) begin_phase();
    flows_.phases.back().sends.emplace_back(dst, payload.size);
  }
  Payload recv(int src, int, double) override {
    if (flows_.phases.empty()) begin_phase();
    flows_.phases.back().receives.push_back(src);
    return {};
  }

 private:
  // A phase sends to and receives from each peer at most once in every
  // algorithm here: room for that, allocated once per phase.
  void begin_phase() {
    FlowPhase& phase = flows_.phases.emplace_back();
    phase.sends.reserve(world_ - 1);
    phase.receives.reserve(world_ - 1);
  }

  int rank_, world_;
  Flows flows_;
};

// A size-only collective at the flow level runs against the recorder, and the
// runtime times what it recorded as a whole; otherwise it runs as given.
template <class Algorithm>
void run(const CollectiveContext& c, CollectiveBuffer& buf, const Algorithm& algorithm) {
  if (buf.is_real() || !c.rt.times_flows()) return algorithm(c, buf);
  FlowRecorder recorder(c.rt, c.tag);
  algorithm(CollectiveContext{recorder, c.tag, c.timeout_s}, buf);
  if (!recorder.flows().phases.empty()) c.rt.run_flows(recorder.flows(), c.timeout_s);
}

}  // namespace

Payload CollectiveBuffer::pack(std::uint64_t begin, std::uint64_t count) const {
  if (!is_real()) return Payload::sized(count * element_bytes_);
  return Payload::of(std::as_bytes(data_.subspan(begin, count)));
}

// Only real contents are checked: a size-only buffer also runs against the
// flow level's recorder, which receives nothing.
void CollectiveBuffer::assign(std::uint64_t begin, const Payload& p) {
  if (!is_real()) return;
  check_size(p, p.size / element_bytes_ * element_bytes_);
  std::memcpy(data_.data() + begin, p.bytes.data(), p.size);
}

void CollectiveBuffer::assign_sum(std::uint64_t begin, std::uint64_t count, std::span<const Payload* const> parts) {
  if (!is_real()) return;
  float* out = data_.data() + begin;
  std::vector<const float*> in;
  for (const Payload* p : parts) {
    if (p) check_size(*p, count * element_bytes_);
    in.push_back(p ? floats(*p) : out);
  }
  // A chunk at a time, summed in the order of `parts` before it is written:
  // the own values are read first, and the sum stays in cache between parts.
  constexpr std::uint64_t kChunk = 2048;
  float sum[kChunk];
  for (std::uint64_t at = 0; at < count; at += kChunk) {
    const std::uint64_t m = std::min(kChunk, count - at);
    std::memcpy(sum, in[0] + at, m * sizeof(float));
    for (std::size_t k = 1; k < in.size(); ++k)
      for (std::uint64_t i = 0; i < m; ++i) sum[i] += in[k][at + i];
    std::memcpy(out + at, sum, m * sizeof(float));
  }
}

void CollectiveBuffer::add_own_to(std::uint64_t begin, std::uint64_t count, Payload& p) const {
  if (!is_real()) return;
  check_size(p, count * element_bytes_);
  float* sum = reinterpret_cast<float*>(p.bytes.data());
  const float* own = data_.data() + begin;
  for (std::uint64_t i = 0; i < count; ++i) sum[i] += own[i];
}

Payload CollectiveBuffer::pass_on(Payload received, std::uint64_t begin, std::uint64_t count) const {
  if (!is_real()) return pack(begin, count);
  received.sent_s = -1;  // sent anew
  return received;
}

std::string_view name(AllReduceAlgorithm a) {
  switch (a) {
    case AllReduceAlgorithm::kRing:
      return "ring";
    case AllReduceAlgorithm::kOneShot:
      return "one-shot";
    case AllReduceAlgorithm::kTwoShot:
      return "two-shot";
  }
  return "?";
}

Block block_of(std::uint64_t elements, int world, int b) {
  const std::uint64_t base = elements / world, extra = elements % world;
  const std::uint64_t begin = b * base + std::min<std::uint64_t>(b, extra);
  return {begin, base + (static_cast<std::uint64_t>(b) < extra ? 1 : 0)};
}

namespace {

// Sum, in rank order, one block gathered from every rank (own data included).
void reduce_in_rank_order(const CollectiveContext& c, CollectiveBuffer& buf, Block blk,
                          const std::vector<Payload>& from_rank) {
  std::vector<const Payload*> parts;
  parts.reserve(c.rt.world());
  for (int k = 0; k < c.rt.world(); ++k) parts.push_back(k == c.rt.rank() ? nullptr : &from_rank[k]);
  buf.assign_sum(blk.begin, blk.count, parts);
}

// A block travels the ring in one message: each rank adds its own values to
// the message that brought the block, or copies the block out of it, and sends
// that message on. The block is copied out of the buffer once, not per step.
void ring_all_reduce(const CollectiveContext& c, CollectiveBuffer& buf) {
  const int n = c.rt.world(), r = c.rt.rank();
  const int right = (r + 1) % n, left = (r - 1 + n) % n;
  const auto block = [&](int b) { return block_of(buf.elements(), n, (b % n + n) % n); };
  const Block own = block(r);
  Payload carried = buf.pack(own.begin, own.count);
  // Reduce-scatter: after n-1 steps rank r holds the full sum of block (r+1)%n.
  for (int s = 0; s < n - 1; ++s) {
    c.rt.send(right, c.tag, std::move(carried));
    const Block in = block(r - s - 1);
    Payload incoming = c.rt.recv(left, c.tag, c.timeout_s);
    buf.add_own_to(in.begin, in.count, incoming);
    carried = buf.pass_on(std::move(incoming), in.begin, in.count);
  }
  buf.assign(block(r + 1).begin, carried);
  // All-gather the reduced blocks around the ring.
  for (int s = 0; s < n - 1; ++s) {
    c.rt.send(right, c.tag, std::move(carried));
    const Block in = block(r - s);
    Payload incoming = c.rt.recv(left, c.tag, c.timeout_s);
    buf.assign(in.begin, incoming);
    carried = buf.pass_on(std::move(incoming), in.begin, in.count);
  }
}

void one_shot_all_reduce(const CollectiveContext& c, CollectiveBuffer& buf) {
  const int n = c.rt.world(), r = c.rt.rank();
  for (int s = 1; s < n; ++s) c.rt.send(peer_after(r, s, n), c.tag, buf.pack(0, buf.elements()));
  std::vector<Payload> from_rank(n);
  for (int s = 1; s < n; ++s) {
    const int src = peer_before(r, s, n);
    from_rank[src] = c.rt.recv(src, c.tag, c.timeout_s);
  }
  reduce_in_rank_order(c, buf, {0, buf.elements()}, from_rank);
}

void two_shot_all_reduce(const CollectiveContext& c, CollectiveBuffer& buf) {
  const int n = c.rt.world(), r = c.rt.rank();
  // Reduce-scatter: rank j owns block j and receives everyone's copy of it.
  for (int s = 1; s < n; ++s) {
    const int dst = peer_after(r, s, n);
    const Block b = block_of(buf.elements(), n, dst);
    c.rt.send(dst, c.tag, buf.pack(b.begin, b.count));
  }
  std::vector<Payload> from_rank(n);
  for (int s = 1; s < n; ++s) {
    const int src = peer_before(r, s, n);
    from_rank[src] = c.rt.recv(src, c.tag, c.timeout_s);
  }
  reduce_in_rank_order(c, buf, block_of(buf.elements(), n, r), from_rank);
  all_gather(c, buf);
}

void gather_blocks(const CollectiveContext& c, CollectiveBuffer& buf) {
  const int n = c.rt.world(), r = c.rt.rank();
  const Block mine = block_of(buf.elements(), n, r);
  for (int s = 1; s < n; ++s) c.rt.send(peer_after(r, s, n), c.tag, buf.pack(mine.begin, mine.count));
  for (int s = 1; s < n; ++s) {
    const int src = peer_before(r, s, n);
    buf.assign(block_of(buf.elements(), n, src).begin, c.rt.recv(src, c.tag, c.timeout_s));
  }
}

void exchange_blocks(const CollectiveContext& c, CollectiveBuffer& buf) {
  const int n = c.rt.world(), r = c.rt.rank();
  for (int s = 1; s < n; ++s) {
    const int dst = peer_after(r, s, n);
    const Block b = block_of(buf.elements(), n, dst);
    c.rt.send(dst, c.tag, buf.pack(b.begin, b.count));
  }
  // Every block of a rank's buffer may be overwritten only after it was sent.
  for (int s = 1; s < n; ++s) {
    const int src = peer_before(r, s, n);
    buf.assign(block_of(buf.elements(), n, src).begin, c.rt.recv(src, c.tag, c.timeout_s));
  }
}

}  // namespace

void all_reduce(const CollectiveContext& c, CollectiveBuffer& buf, AllReduceAlgorithm algo) {
  if (c.rt.world() == 1) return;
  run(c, buf, [algo](const CollectiveContext& c, CollectiveBuffer& buf) {
    switch (algo) {
      case AllReduceAlgorithm::kRing:
        return ring_all_reduce(c, buf);
      case AllReduceAlgorithm::kOneShot:
        return one_shot_all_reduce(c, buf);
      case AllReduceAlgorithm::kTwoShot:
        return two_shot_all_reduce(c, buf);
    }
  });
}

void all_gather(const CollectiveContext& c, CollectiveBuffer& buf) { run(c, buf, gather_blocks); }

void all_to_all(const CollectiveContext& c, CollectiveBuffer& buf) { run(c, buf, exchange_blocks); }

// Message by message at either level: only the root's sends matter to the
// others, and the root waits for nobody.
void broadcast(const CollectiveContext& c, CollectiveBuffer& buf, int root) {
  const int n = c.rt.world(), r = c.rt.rank();
  if (r == root) {
    for (int s = 1; s < n; ++s) c.rt.send(peer_after(r, s, n), c.tag, buf.pack(0, buf.elements()));
  } else {
    buf.assign(0, c.rt.recv(root, c.tag, c.timeout_s));
  }
}

double all_reduce_cost(AllReduceAlgorithm a, int n, double bytes, double bandwidth, double latency) {
  if (n <= 1) return 0;
  switch (a) {
    case AllReduceAlgorithm::kRing:
      return 2.0 * (n - 1) * latency + 2.0 * (n - 1) / n * bytes / bandwidth;
    case AllReduceAlgorithm::kOneShot:
      return latency + bytes / bandwidth;
    case AllReduceAlgorithm::kTwoShot:
      // Each phase sends 1/n of the data to every peer at once, each over its own cable.
      return 2.0 * latency + 2.0 * bytes / n / bandwidth;
  }
  return 0;
}

AllReduceAlgorithm choose_all_reduce(int n, double bytes, double bandwidth, double latency, bool full_mesh) {
  if (!full_mesh) return AllReduceAlgorithm::kRing;
  AllReduceAlgorithm best = AllReduceAlgorithm::kOneShot;
  for (auto a : {AllReduceAlgorithm::kTwoShot, AllReduceAlgorithm::kRing})
    if (all_reduce_cost(a, n, bytes, bandwidth, latency) < all_reduce_cost(best, n, bytes, bandwidth, latency))
      best = a;
  return best;
}

}  // namespace engine
