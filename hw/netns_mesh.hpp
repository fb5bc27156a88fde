// Several "hosts" on this one Linux machine: network namespaces joined in a
// full mesh of veth pairs, each pair on its own /24, optionally shaped by a tc
// tbf qdisc on both ends; optionally a secondary network beside it, every
// namespace's port into one bridge (a switch) in a namespace of its own, on
// 10.98.0.0/24. Deleting a namespace deletes its veths. The mesh is
// removed by the destructor, by a guard process when the owner dies without
// one (SIGKILL), and, failing both, by the next mesh made on this machine
// (names carry the owner's pid). Needs root and iproute2.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hw/faults/cable_switch.hpp"

namespace hw {

// What one shaped veth pair carries on this 2-core machine, with four ranks
// decoding, while a message still takes latency + size / rate as on a cable:
// at 200 Mbit/s the kernel's per-frame work falls behind (bench/netns_predict_bench).
inline constexpr double kCableRateBps = 50e6;

class NetnsMesh : public CableSwitch {
 public:
  // Why a mesh cannot be built here ("" when it can): not root, no `ip`, no netns.
  static std::string unavailable_reason();

  // `tbf`: tc tbf parameters for every veth, e.g. "rate 100mbit burst 1600 latency 200ms"; empty: unshaped.
  // `secondary_tbf`: with a value, the secondary network, each port shaped by it both ways.
  explicit NetnsMesh(int n, const std::string& tbf = "", const std::optional<std::string>& secondary_tbf = {});
  ~NetnsMesh() override;
  NetnsMesh(const NetnsMesh&) = delete;
  NetnsMesh& operator=(const NetnsMesh&) = delete;

  int size() const { return n_; }
  std::string ns(int r) const { return prefix_ + std::to_string(r); }
  // For `launch --exec-prefix`: runs rank r inside namespace r.
  std::string exec_prefix() const { return "ip netns exec " + prefix_ + "{rank}"; }
  // The cluster file: rank r's addresses are its ends of the mesh's pairs
  // (and its secondary_ip, with a secondary network).
  // `rdma`: over the rdma transport, rank r reaching rank k on the device of
  // its veth towards k, as softrdma names it (rdma_v<k>).
  nlohmann::json cluster(int port, bool rdma = false) const;
  // Rank r's address on its cable to rank k (softrdma's device there has it).
  std::string address_towards(int r, int k) const;

  // Throws when `ip` fails.
  void set_link_up(int a, int b, bool up) override;
  // Throws when `tc` fails.
  void shape_link(int a, int b, const std::string& tbf) override;
  // Throws when `ip` fails.
  void set_secondary_port_up(int r, bool up) override;

 private:
  void add_secondary_network(const std::string& tbf);
  void start_guard();
  void teardown();
  // The namespaces: one per rank, and the switch's when there is a secondary network.
  int namespaces() const { return secondary_ ? n_ + 1 : n_; }

  int n_;
  bool secondary_ = false;
  std::string prefix_;
  pid_t guard_ = -1;
  int guard_fd_ = -1;  // the guard deletes the namespaces when this closes
};

}  // namespace hw
