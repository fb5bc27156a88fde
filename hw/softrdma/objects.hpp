// The objects behind the ibv_* handles softrdma hands out. Each embeds the
// libibverbs struct as its first member, so a client's pointer is ours and
// verbs.h's inline functions (ibv_post_send, ibv_poll_cq, ...) reach us through
// ibv_context::ops. One mutex per context guards everything under it; whoever
// reads the socket (the receiver thread, or a poller) takes it for each batch.
#pragma once

#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hw/softrdma/config.hpp"

namespace softrdma {

inline constexpr int kGidCount = 2;      // index 0 link-local, index 1 IPv4-mapped (RoCE v2)
// kIpv4GidIndex is the one macOS says to use (docs/reference-facts.md#macos-rdma-over-thunderbolt).
inline constexpr int kIpv4GidIndex = 1;
inline constexpr int kMaxQpsPerContext = 255;
inline constexpr std::uint32_t kMaxInline = 256;

struct Device {
  ibv_device base;
  std::string ifname;
};

struct Qp;
struct Cq;

struct Context {
  ibv_context base;
  Device* device = nullptr;
  in_addr addr{};  // the interface's IPv4 address, the frames' source
  std::uint16_t udp_port = 0;
  int sock = -1;  // one UDP socket per context; qpn = udp_port << 8 | slot
  int wake[2] = {-1, -1};
  int async_write = -1;  // base.async_fd is the read end
  std::mutex mu;
  std::array<Qp*, kMaxQpsPerContext + 1> qps{};
  std::map<std::uint32_t, struct Mr*> mrs;  // by lkey
  std::uint32_t next_key = 1;
  std::thread receiver;
  // One reader of the socket at a time, so datagrams are delivered in the
  // order they arrived; taken before mu, never inside it.
  std::mutex receive_mu;
  std::vector<std::byte> receive_buffer;  // guarded by receive_mu
  std::atomic<bool> stopping{false};
  WireFaults faults;     // loss and reordering of outgoing packets
  std::mutex faults_mu;  // guards rng and every QP's held packet
  std::mt19937_64 rng;
  bool failed = false;     // the stack failure reached this context
  bool port_down = false;  // the interface is down or lost its address: nothing is delivered
  std::chrono::steady_clock::time_point port_checked{};    // receiver thread only
  std::chrono::steady_clock::time_point faults_checked{};  // receiver thread only
};

struct Pd {
  ibv_pd base;
};

struct Mr {
  ibv_mr base;
  int access = 0;
};

struct Channel {
  ibv_comp_channel base;
  int write_fd = -1;
  std::mutex mu;
  std::deque<Cq*> events;  // one per byte written to write_fd
};

struct Cq {
  ibv_cq base;
  std::deque<ibv_wc> wcs;
  bool armed = false;
};

struct RecvWqe {
  std::uint64_t wr_id = 0;
  std::vector<ibv_sge> sges;
  std::size_t capacity = 0;
};

struct Qp {
  ibv_qp base;
  ibv_qp_cap cap{};
  bool sq_sig_all = false;
  int slot = 0;
  // Attributes set by ibv_modify_qp.
  std::uint16_t pkey_index = 0;
  std::uint8_t port = 1;
  int access = 0;
  ibv_mtu path_mtu = IBV_MTU_1024;
  std::uint32_t dest_qpn = 0, rq_psn = 0, sq_psn = 0;
  ibv_ah_attr ah{};
  sockaddr_in remote{};
  std::vector<std::byte> held;  // a packet held back by SOFTRDMA_REORDER, sent after the next one
  // Receive side: posted WQEs and the message being reassembled into the head one.
  std::deque<RecvWqe> rq;
  bool in_message = false;
  std::size_t received = 0;
  std::uint32_t expected_psn = 0;
};

inline Context* ctx_of(ibv_context* c) { return reinterpret_cast<Context*>(c); }
inline Qp* qp_of(ibv_qp* q) { return reinterpret_cast<Qp*>(q); }
inline Cq* cq_of(ibv_cq* c) { return reinterpret_cast<Cq*>(c); }
inline Mr* mr_of(ibv_mr* m) { return reinterpret_cast<Mr*>(m); }

// Bytes of one packet's payload at `mtu`.
inline std::size_t mtu_bytes(ibv_mtu mtu) { return std::size_t{128} << static_cast<int>(mtu); }

}  // namespace softrdma
