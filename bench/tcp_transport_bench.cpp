// One rank of a TCP transport measurement over a cluster file (the script
// bench/tcp-vs-iperf-mpi.sh starts every rank and compares with iperf3 and
// Open MPI). Rank 0 prints one number.
//   p2p BYTES COUNT          rank 0 sends COUNT messages of BYTES to rank 1: bytes/s
//   allreduce BYTES ITERS    every rank all-reduces BYTES of floats (best algorithm): mean seconds
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/node/collectives.hpp"
#include "hw/cluster.hpp"
#include "hw/os.hpp"
#include "hw/transport.hpp"

namespace {

constexpr int kTag = 7;
constexpr double kTimeoutS = 60;

double p2p(engine::Runtime& rt, std::uint64_t bytes, int count) {
  // Rank 0 sends `count` messages and times until rank 1 acknowledges the last.
  if (rt.rank() == 0) {
    const double start = rt.now();
    for (int i = 0; i < count; ++i) rt.send(1, kTag, engine::Payload::sized(bytes));
    rt.recv(1, kTag, kTimeoutS);
    return static_cast<double>(bytes) * count / (rt.now() - start);
  }
  if (rt.rank() == 1) {
    for (int i = 0; i < count; ++i) rt.recv(0, kTag, kTimeoutS);
    rt.send(0, kTag, engine::Payload{});
  }
  return 0;
}

// Every rank runs each algorithm in the same order; the fastest one's mean counts.
double all_reduce_mean_s(engine::Runtime& rt, std::uint64_t bytes, int iters) {
  std::vector<float> data(std::max<std::uint64_t>(1, bytes / sizeof(float)), 1.0f);
  double best = 1e30;
  for (auto algo : {engine::AllReduceAlgorithm::kRing, engine::AllReduceAlgorithm::kOneShot,
                    engine::AllReduceAlgorithm::kTwoShot}) {
    auto buf = engine::CollectiveBuffer::real(data);
    engine::all_reduce({rt, kTag, kTimeoutS}, buf, algo);  // warm-up
    const double start = rt.now();
    for (int i = 0; i < iters; ++i) engine::all_reduce({rt, kTag, kTimeoutS}, buf, algo);
    best = std::min(best, (rt.now() - start) / iters);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    fmt::print(stderr, "usage: {} CLUSTER RANK p2p|allreduce BYTES COUNT|ITERS\n", argv[0]);
    return 2;
  }
  hw::keep_freed_memory();  // as `meshinfer node` does
  const hw::ClusterSpec cluster = hw::load_cluster(argv[1]);
  const int rank = std::atoi(argv[2]);
  const std::string mode = argv[3];
  const std::uint64_t bytes = std::strtoull(argv[4], nullptr, 10);
  const auto rt = hw::make_runtime(cluster, rank, hw::TransportOptions{});
  const double value =
      mode == "p2p" ? p2p(*rt, bytes, std::atoi(argv[5])) : all_reduce_mean_s(*rt, bytes, std::atoi(argv[5]));
  if (rank == 0) fmt::print("{:.9g}\n", value);
  return 0;
}
