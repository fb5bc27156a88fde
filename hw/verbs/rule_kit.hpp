// The kit rdma-check's rules test a stack with: one end's context, protection domain and
// registered buffer, a UC queue pair walked to RTS, and a receive or a send on
// it. Shared by the loopback pair (hw/verbs/rdma_rules.cpp) and the cable
// between two hosts (hw/verbs/cable_path.cpp).
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/verbs/port_choice.hpp"
#include "hw/verbs/verbs_api.hpp"

namespace hw {

// What became of one frame: "crossed", "dropped", "refused by ibv_post_send: ...".
struct Delivery {
  bool crossed = false;
  std::string what;
};

}  // namespace hw

namespace hw::rule_kit {

// "errno N (text)".
std::string errno_text(int e);

// One end: its own context, PD and registered buffer (1 MiB, the largest frame tried).
struct Side {
  Side(VerbsApi& a, const std::string& device);
  ~Side();
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;
  VerbsApi& api;
  std::vector<std::byte> buf;
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_mr* mr = nullptr;
};

// A queue pair with a CQ of its own, destroyed straight from RTS (never ERR).
struct Qp {
  Qp(Side& s, ibv_qp_type type);
  ~Qp();
  Qp(const Qp&) = delete;
  Qp& operator=(const Qp&) = delete;
  VerbsApi& api;
  Side& side;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  int error = 0;  // errno of ibv_create_qp
};

// Each returns 0 or the failing call's errno.
int to_init(Qp& q, const PortChoice& port);
// Towards the queue pair `remote_qpn` at `remote_gid`, at path MTU `mtu`.
int to_rtr(Qp& q, std::uint32_t remote_qpn, const std::array<std::uint8_t, 16>& remote_gid, const PortChoice& port,
           ibv_mtu mtu);
int to_rts(Qp& q);
// A receive of `bytes` into the start of q's side's buffer.
int post_recv(Qp& q, std::size_t bytes);

// The first completion on q's CQ within wait_s.
std::optional<ibv_wc> completion(Qp& q, double wait_s);

// The byte a test frame holds at offset i, so the receiver can tell whole from altered.
inline std::byte pattern(std::size_t i) { return static_cast<std::byte>(i * 7 + 1); }

// Posts the first `bytes` of q's side's buffer as `op` (an RDMA WRITE goes to
// remote_addr / rkey); 0 or ibv_post_send's errno.
int post_frame(Qp& q, std::size_t bytes, ibv_wr_opcode op, std::uintptr_t remote_addr, std::uint32_t rkey);
// The receiving end's view of a frame of `bytes` sent as `op`, within wait_s:
// a SEND's receive completion and the bytes it holds, an RDMA WRITE's bytes.
Delivery landed(Qp& receiver, std::size_t bytes, ibv_wr_opcode op, double wait_s);

}  // namespace hw::rule_kit
