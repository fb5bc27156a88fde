// What softrdma's call files share: completions, memory checks and the wire.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "hw/softrdma/objects.hpp"

namespace softrdma {

// Queues `wc` on `cq` and, when armed, signals its completion channel.
// REQUIRES: the CQ's context mutex is held.
void complete(Cq& cq, const ibv_wc& wc);
// A completion for `qp` of `wr_id` with `status` and `opcode`.
ibv_wc completion(const Qp& qp, std::uint64_t wr_id, ibv_wc_status status, ibv_wc_opcode opcode);

// Whether `sge` lies in a memory region of `ctx` with lkey sge.lkey and `access`.
// REQUIRES: ctx.mu is held.
bool sge_in_mr(Context& ctx, const ibv_sge& sge, int access);

// One SEND on its way to the wire: its bytes and the PSN of its first packet.
struct OutgoingSend {
  std::span<const std::byte> message;
  std::uint32_t first_psn = 0;
};
// Sends each message to `qp`'s remote as path-MTU packets, as many datagrams
// to a system call as fit. Returns 0 or an errno. REQUIRES: qp is in RTS;
// ctx.mu is not held.
int send_packets(Context& ctx, Qp& qp, std::span<const OutgoingSend> sends);

// Writes `event` to ctx's async fd, for ibv_get_async_event.
void post_async_event(Context& ctx, const ibv_async_event& event);
// Called by the receiver thread: follows the interface's state into the port's
// (DOWN or ACTIVE), with its asynchronous event. REQUIRES: ctx.mu is not held.
void watch_port(Context& ctx);
// Called by the receiver thread: takes the rates of loss and reordering from
// SOFTRDMA_FAULT_FILE when it exists (hw/softrdma/fault_file.cpp).
void watch_fault_file(Context& ctx);

// Delivers every datagram waiting on ctx's socket into posted receives,
// without blocking: the receiver thread's work, done also by ibv_poll_cq, so
// a busy-polling application sees a packet without waiting for that thread
// to be scheduled; `if_nobody_reads`: returns at once while another reads
// (a poller must not sleep on the lock). REQUIRES: ctx.mu is not held.
void receive_waiting(Context& ctx, bool if_nobody_reads);
// Starts and stops the thread that receives ctx's datagrams while nobody polls.
void start_receiver(Context& ctx);
void stop_receiver(Context& ctx);

// The IPv4 address in an IPv4-mapped GID, or false when `gid` is not one.
bool ipv4_of_gid(const ibv_gid& gid, in_addr* addr);
ibv_gid ipv4_mapped_gid(in_addr addr);

}  // namespace softrdma

namespace softrdma {

// The data path, reached through ibv_context::ops as verbs.h's inline functions dispatch it.
int poll_cq(ibv_cq* cq, int entries, ibv_wc* wc);
int req_notify_cq(ibv_cq* cq, int solicited_only);
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);

}  // namespace softrdma
