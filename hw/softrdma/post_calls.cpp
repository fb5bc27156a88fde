// ibv_post_send and ibv_post_recv, reached through ibv_context::ops. A SEND is
// gathered into one message, cut into path-MTU packets and sent as UDP
// datagrams; UC gives the sender no word of what happened to it.
#include <cerrno>
#include <cstring>
#include <deque>
#include <span>
#include <vector>

#include "hw/softrdma/config.hpp"
#include "hw/softrdma/internal.hpp"
#include "hw/softrdma/stack_failure.hpp"

namespace softrdma {

namespace {

// The bytes of `wr`: its one SGE's memory where it has one, else gathered
// into `copy`. REQUIRES: ctx.mu is held.
int gather(Context& ctx, const Qp& qp, const ibv_send_wr& wr, std::vector<std::byte>& copy,
           std::span<const std::byte>* message) {
  if (wr.num_sge < 0 || static_cast<std::uint32_t>(wr.num_sge) > qp.cap.max_send_sge)
    return refuse("ibv_post_send", EINVAL, "more SGEs than the QP's max_send_sge");
  const bool inline_data = (wr.send_flags & IBV_SEND_INLINE) != 0;
  for (int i = 0; i < wr.num_sge; ++i)
    if (!inline_data && !sge_in_mr(ctx, wr.sg_list[i], 0))
      return refuse("ibv_post_send", EINVAL, "an SGE outside every registered memory region of its lkey");
  auto bytes_of = [](const ibv_sge& sge) {
    return std::span(reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(sge.addr)), sge.length);
  };
  if (wr.num_sge == 1 && !inline_data) {
    *message = bytes_of(wr.sg_list[0]);  // sent from where it lies: the send completes only once it left
    return 0;
  }
  copy.clear();
  for (int i = 0; i < wr.num_sge; ++i)
    copy.insert(copy.end(), bytes_of(wr.sg_list[i]).begin(), bytes_of(wr.sg_list[i]).end());
  if (inline_data && copy.size() > kMaxInline) return refuse("ibv_post_send", EINVAL, "inline data over 256 bytes");
  *message = copy;
  return 0;
}

}  // namespace

// A chain of work requests goes to the wire in as few system calls as its
// datagrams allow, then completes in order.
int post_send(ibv_qp* q, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* qp = qp_of(q);
  Context* ctx = ctx_of(q->context);
  thread_local std::deque<std::vector<std::byte>> copies;  // stable addresses for gathered WRs
  thread_local std::vector<OutgoingSend> sends;
  thread_local std::vector<ibv_wc> done;
  sends.clear();
  done.clear();
  int err = 0;
  {
    std::lock_guard lock(ctx->mu);
    if (stack_failed()) fail_context(*ctx);
    for (std::size_t n = 0; wr && !err; wr = wr->next, ++n) {
      if (q->state != IBV_QPS_RTS) err = refuse("ibv_post_send", EINVAL, "the queue pair is not in RTS");
      // macOS offers two-sided SEND/RECV only: no RDMA WRITE or READ, no atomics
      // (docs/reference-facts.md#macos-rdma-over-thunderbolt).
      else if (wr->opcode != IBV_WR_SEND)
        err = refuse("ibv_post_send", EOPNOTSUPP, "only IBV_WR_SEND exists on macOS's RDMA stack");
      std::span<const std::byte> message;
      if (!err) {
        if (copies.size() <= n) copies.emplace_back();
        err = gather(*ctx, *qp, *wr, copies[n], &message);
      }
      if (err) {
        *bad = wr;
        break;
      }
      const std::size_t mtu = mtu_bytes(qp->path_mtu);
      const std::size_t packets = message.empty() ? 1 : (message.size() + mtu - 1) / mtu;
      // A frame over the stack's maximum (4 KiB on macOS 26.2, up to 512 KiB on
      // 26.3; docs/reference-facts.md#macos-rdma-over-thunderbolt), or sent while the port is
      // DOWN, never reaches the peer, and UC tells nobody.
      if (message.size() <= config().max_frame && !ctx->port_down) sends.push_back({message, qp->sq_psn});
      qp->sq_psn = static_cast<std::uint32_t>((qp->sq_psn + packets) & 0xffffff);
      if (qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED)) {
        ibv_wc wc = completion(*qp, wr->wr_id, IBV_WC_SUCCESS, IBV_WC_SEND);
        wc.byte_len = static_cast<std::uint32_t>(message.size());
        done.push_back(wc);
      }
    }
  }
  if (!sends.empty()) send_packets(*ctx, *qp, sends);
  if (!done.empty()) {
    std::lock_guard lock(ctx->mu);
    for (const ibv_wc& wc : done) complete(*cq_of(q->send_cq), wc);
  }
  return err;
}

int post_recv(ibv_qp* q, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* qp = qp_of(q);
  Context* ctx = ctx_of(q->context);
  std::lock_guard lock(ctx->mu);
  for (; wr; wr = wr->next) {
    int err = 0;
    if (q->state == IBV_QPS_RESET || q->state == IBV_QPS_ERR)
      err = refuse("ibv_post_recv", EINVAL, "the queue pair is in RESET or ERR");
    // macOS refuses ibv_post_recv before the QP reaches RTS (docs/reference-facts.md#macos-rdma-over-thunderbolt).
    else if (q->state != IBV_QPS_RTS && !config().allow_recv_before_rts)
      err = refuse("ibv_post_recv", EINVAL,
                   "posted before RTS, as macOS refuses it (SOFTRDMA_ALLOW=recv-before-rts lifts this)");
    else if (qp->rq.size() >= qp->cap.max_recv_wr)
      err = refuse("ibv_post_recv", ENOMEM, "the receive queue is full");
    else if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > qp->cap.max_recv_sge)
      err = refuse("ibv_post_recv", EINVAL, "more SGEs than the QP's max_recv_sge");
    RecvWqe w;
    w.wr_id = wr->wr_id;
    for (int i = 0; !err && i < wr->num_sge; ++i) {
      if (!sge_in_mr(*ctx, wr->sg_list[i], IBV_ACCESS_LOCAL_WRITE))
        err = refuse("ibv_post_recv", EINVAL, "an SGE outside every LOCAL_WRITE memory region of its lkey");
      w.sges.push_back(wr->sg_list[i]);
      w.capacity += wr->sg_list[i].length;
    }
    if (err) {
      *bad = wr;
      return err;
    }
    qp->rq.push_back(std::move(w));
  }
  return 0;
}

}  // namespace softrdma
