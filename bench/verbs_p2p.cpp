// One side of a point-to-point measurement over VerbsRuntime (or, with
// --transport tcp, the TCP transport on the same loopback), for
// bench/verbs-bench.sh: rank 0 and rank 1 run as two processes joined by a
// TCP side channel on 127.0.0.1:PORT. `--list` prints the RDMA devices, one a
// line. Rank 0 prints one result line:
//   lat: "lat_us <one-way microseconds>" from a ping-pong of SIZE-byte messages
//   bw:  "bw_MBps <MB/s>" from ITERS SIZE-byte messages streamed, then one reply.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>

#include "hw/verbs/verbs_api.hpp"
#include "hw/verbs/verbs_runtime.hpp"

int run(int argc, char** argv) {
  CLI::App app{"VerbsRuntime point-to-point bandwidth or latency (one rank)"};
  bool list = false;
  int rank = 0, port = 0;
  std::string device, mode = "lat", qp = "uc", transport = "verbs";
  std::uint64_t size = 8;
  int iters = 1000;
  std::size_t frame = 4096;
  app.add_flag("--list", list, "print the RDMA devices and exit");
  app.add_option("--rank", rank)->check(CLI::Range(0, 1));
  app.add_option("--port", port, "rank 0's side-channel port on 127.0.0.1");
  app.add_option("--transport", transport)->check(CLI::IsMember({"verbs", "tcp"}));
  app.add_option("--device", device);
  app.add_option("--mode", mode)->check(CLI::IsMember({"lat", "bw"}));
  app.add_option("--qp", qp)->check(CLI::IsMember({"uc", "rc"}));
  app.add_option("--size", size);
  app.add_option("--iters", iters)->check(CLI::PositiveNumber);
  app.add_option("--frame", frame);
  CLI11_PARSE(app, argc, argv);
  if (list) {
    for (const std::string& name : hw::libibverbs().device_names()) fmt::print("{}\n", name);
    return 0;
  }
  if (port <= 0 || (device.empty() && transport == "verbs")) {
    fmt::print(stderr, "verbs_p2p: --port and, over verbs, --device are required\n");
    return 2;
  }

  hw::TcpOptions tcp;
  tcp.coordinator_port = port;
  hw::VerbsOptions verbs;
  verbs.devices = {device, device};
  verbs.devices[rank].reset();
  verbs.qp_type = qp == "uc" ? hw::QpType::kUC : hw::QpType::kRC;
  verbs.frame_bytes = frame;
  std::unique_ptr<engine::Runtime> rt;
  if (transport == "tcp")
    rt = std::make_unique<hw::TcpRuntime>(rank, 2, tcp);
  else
    rt = hw::make_verbs_runtime(rank, 2, tcp, verbs);
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

  const int warmup = std::max(1, iters / 10);
  mode == "lat" ? ping_pong(warmup) : stream(warmup);
  const auto start = std::chrono::steady_clock::now();
  mode == "lat" ? ping_pong(iters) : stream(iters);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rank == 0) {
    if (mode == "lat")
      fmt::print("lat_us {:.3f}\n", seconds / iters / 2 * 1e6);
    else
      fmt::print("bw_MBps {:.1f}\n", static_cast<double>(size) * iters / seconds / 1e6);
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "verbs_p2p: {}\n", e.what());
    return 1;
  }
}
