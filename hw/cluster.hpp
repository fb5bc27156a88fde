// The cluster file users of MLX-based tools already keep (the MLX hostfile):
// a JSON array with one object per rank, {"ssh": host, "ips": [...],
// "rdma": [null, "rdma_en3", ...], "secondary_ip": ...}, or an object
// {"transport", "port", "hosts"} around that array. load_cluster() refuses bad
// input with InputError.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hw/verbs/device_matrix.hpp"

namespace hw {

struct ClusterHost {
  std::string ssh;               // where `launch` runs this rank ("localhost": no ssh)
  std::vector<std::string> ips;  // IPv4 addresses of this host; peers reach it on one of them
  std::string secondary_ip;      // its address on the secondary network (fallback); "" without one
};

struct ClusterSpec {
  std::string file;               // where it was read, for errors
  std::string transport = "tcp";  // "tcp" or "rdma"
  // Rank 0's side channel; heartbeats use port + 1, the secondary network port + 2 and + 3.
  int port = 5000;
  std::vector<ClusterHost> hosts;  // by rank
  // Row r: the RDMA device rank r uses towards each rank (nullopt on the diagonal).
  // Empty when the file has no "rdma" rows.
  DeviceMatrix rdma_devices;
  std::size_t rdma_frame_bytes = 4096;  // the verbs frame stride: 4 KiB on macOS 26.2, up to 512 KiB from 26.3
  std::string rdma_qp = "uc";           // "uc" (all macOS offers) or "rc"
  // What every rank proves it holds (hw/membership_proof.hpp). Empty in the
  // file: `launch` makes one per run and hands it to the ranks on their stdin.
  std::string secret;

  int world() const { return static_cast<int>(hosts.size()); }
  // Whether every host has an address on a secondary network (none has, else).
  bool has_secondary() const { return !hosts.empty() && !hosts.front().secondary_ip.empty(); }
  // The address rank `from` dials to reach rank `to`: the first of `to`'s
  // addresses on a /24 that `from` also has (a cable's own subnet in a full
  // mesh), else `to`'s first address.
  std::string address(int from, int to) const;
  // True when `launch` starts rank r as a local process rather than over ssh.
  bool is_local(int r) const;
  // What the ranks talk over, for a report: "tcp between 4 ranks on 127.0.0.1",
  // "rdma (uc, 4096-byte frames; tcp side channel) between 4 ranks on 4 hosts".
  std::string describe_transport() const;
  // How this transport puts a message on the wire, for the simulator's card:
  // over rdma, padded to the verbs stride; over TCP, a byte stream in Ethernet
  // frames of 1448 payload bytes (MTU 1500 less IPv4 and TCP with timestamps)
  // and 66 bytes of headers (those and Ethernet's 14).
  std::size_t frame_bytes() const { return transport == "rdma" ? rdma_frame_bytes : 1448; }
  std::size_t frame_header_bytes() const { return transport == "rdma" ? 0 : 66; }
};

ClusterSpec load_cluster(const std::string& path);
// The same from text; `file` names it in errors.
ClusterSpec parse_cluster(const std::string& text, const std::string& file);
// The cluster file for `n` ranks on 127.0.0.1, coordinator at `port`: over
// TCP, or over the rdma transport with every pair on `rdma_device` when given
// (rdma_lo under softrdma, a Soft-RoCE rxe0 on loopback's address...); with
// `secret` when not empty.
std::string local_cluster_json(int n, int port, const std::string& rdma_device = "", const std::string& secret = "");
// Reads the secret `launch` writes on a rank's stdin (--secret-stdin) into `c`; waits at most 10 s.
void read_secret_from_stdin(ClusterSpec& c);
// What a run hands its ranks on stdin: the file's secret, else a new one for this run.
std::string secret_for_run(const ClusterSpec& c);

}  // namespace hw
