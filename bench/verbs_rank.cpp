// One rank of a measurement over VerbsRuntime (or, with --transport tcp, the
// TCP transport between the same addresses), for bench/verbs-bench.sh: WORLD
// ranks run as processes joined by a TCP side channel on rank 0's HOST:PORT,
// each listening on its own address (its namespace's, or loopback).
// `--list` prints the RDMA devices, one a line. Rank 0 prints one result line:
//   lat: "lat_us <one-way microseconds>" from a ping-pong of SIZE-byte messages (2 ranks)
//   bw:  "bw_MBps <MB/s>" from ITERS SIZE-byte messages streamed, then one reply (2 ranks)
//   allreduce: "allreduce_us <microseconds per all-reduce> <algorithm>" of SIZE bytes of
//        floats, with the algorithm the engine picks for a full mesh of --card's links.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>

#include "engine/cards/catalog.hpp"
#include "engine/node/collectives.hpp"
#include "hw/verbs/verbs_api.hpp"
#include "hw/verbs/verbs_runtime.hpp"

int run(int argc, char** argv) {
  CLI::App app{"One rank of a VerbsRuntime or TCP transport measurement"};
  bool list = false;
  int rank = 0, world = 2, port = 0;
  std::string host = "127.0.0.1", listen = "127.0.0.1", device, mode = "lat", qp = "uc", transport = "verbs", card_name = "tb5-rdma";
  std::uint64_t size = 8;
  int iters = 1000;
  std::size_t frame = 4096;
  app.add_flag("--list", list, "print the RDMA devices and exit");
  app.add_option("--rank", rank)->check(CLI::NonNegativeNumber);
  app.add_option("--world", world)->check(CLI::Range(2, 64));
  app.add_option("--host", host, "rank 0's side-channel address");
  app.add_option("--port", port, "rank 0's side-channel port");
  app.add_option("--listen", listen, "this rank's own address, where its peers dial it");
  app.add_option("--transport", transport)->check(CLI::IsMember({"verbs", "tcp"}));
  app.add_option("--device", device, "this rank's RDMA device (one for every peer)");
  app.add_option("--mode", mode)->check(CLI::IsMember({"lat", "bw", "allreduce"}));
  app.add_option("--qp", qp)->check(CLI::IsMember({"uc", "rc"}));
  app.add_option("--size", size);
  app.add_option("--iters", iters)->check(CLI::PositiveNumber);
  app.add_option("--frame", frame);
  app.add_option("--card", card_name, "allreduce: the link card whose figures choose the algorithm");
  CLI11_PARSE(app, argc, argv);
  if (list) {
    for (const std::string& name : hw::libibverbs().device_names()) fmt::print("{}\n", name);
    return 0;
  }
  if (port <= 0 || (device.empty() && transport == "verbs") || rank >= world || (mode != "allreduce" && world != 2)) {
    fmt::print(stderr, "verbs_rank: --port, a rank under --world, over verbs --device, and 2 ranks for lat and bw\n");
    return 2;
  }

  hw::TcpOptions tcp;
  tcp.coordinator_host = host;
  tcp.coordinator_port = port;
  tcp.listen_hosts = {listen};
  hw::VerbsOptions verbs;
  verbs.devices.assign(world, device);
  verbs.devices[rank].reset();
  verbs.qp_type = qp == "uc" ? hw::QpType::kUC : hw::QpType::kRC;
  verbs.frame_bytes = frame;
  std::unique_ptr<engine::Runtime> rt;
  if (transport == "tcp")
    rt = std::make_unique<hw::TcpRuntime>(rank, world, tcp);
  else
    rt = hw::make_verbs_runtime(rank, world, tcp, verbs);
  const int peer = 1 - rank;
  const std::vector<std::byte> content(size, std::byte{0x5a});
  // A fresh payload per send, copied at memcpy speed (copying a Payload copies byte by byte).
  const auto message = [&] { return engine::Payload::of(content); };
  const double timeout = 30;

  auto ping_pong = [&](int n) {
    for (int i = 0; i < n; ++i) {
      if (rank == 0)
        rt->send(peer, 1, message()), rt->recv(peer, 1, timeout);
      else
        rt->recv(peer, 1, timeout), rt->send(peer, 1, message());
    }
  };
  auto stream = [&](int n) {
    for (int i = 0; i < n; ++i) {
      if (rank == 0)
        rt->send(peer, 2, message());
      else
        rt->recv(peer, 2, timeout);
    }
    if (rank == 0)
      rt->recv(peer, 3, timeout);
    else
      rt->send(peer, 3, engine::Payload{});
  };
  const engine::LinkCard& card = engine::Catalog::builtin().link(card_name);
  const auto algo = engine::choose_all_reduce(world, static_cast<double>(size), card.bandwidth, card.latency_s, true);
  std::vector<float> floats(std::max<std::uint64_t>(size / sizeof(float), 1), 1.0f);
  auto all_reduces = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto buffer = engine::CollectiveBuffer::real(floats);
      engine::all_reduce({*rt, 4, timeout}, buffer, algo);
    }
  };
  auto measure = [&](int n) {
    if (mode == "lat") return ping_pong(n);
    if (mode == "bw") return stream(n);
    all_reduces(n);
  };

  measure(std::max(1, iters / 10));
  const auto start = std::chrono::steady_clock::now();
  measure(iters);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rank == 0) {
    if (mode == "lat")
      fmt::print("lat_us {:.3f}\n", seconds / iters / 2 * 1e6);
    else if (mode == "bw")
      fmt::print("bw_MBps {:.1f}\n", static_cast<double>(size) * iters / seconds / 1e6);
    else
      fmt::print("allreduce_us {:.1f} {}\n", seconds / iters * 1e6, engine::name(algo));
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "verbs_rank: {}\n", e.what());
    return 1;
  }
}
