// ibv_post_send and ibv_post_recv, reached through ibv_context::ops. A SEND is
// gathered into one message, cut into path-MTU packets and sent as UDP
// datagrams; UC gives the sender no word of what happened to it.
#include <cerrno>
#include <cstring>
#include <vector>

#include "hw/softrdma/config.hpp"
#include "hw/softrdma/internal.hpp"
#include "hw/softrdma/stack_failure.hpp"

namespace softrdma {

namespace {

// Gathers `wr` into `message`. REQUIRES: ctx.mu is held.
int gather(Context& ctx, const Qp& qp, const ibv_send_wr& wr, std::vector<std::byte>& message) {
  if (wr.num_sge < 0 || static_cast<std::uint32_t>(wr.num_sge) > qp.cap.max_send_sge)
    return refuse("ibv_post_send", EINVAL, "more SGEs than the QP's max_send_sge");
  const bool inline_data = (wr.send_flags & IBV_SEND_INLINE) != 0;
  message.clear();
  for (int i = 0; i < wr.num_sge; ++i) {
    const ibv_sge& sge = wr.sg_list[i];
    if (!inline_data && !sge_in_mr(ctx, sge, 0))
      return refuse("ibv_post_send", EINVAL, "an SGE outside every registered memory region of its lkey");
    const auto* from = reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(sge.addr));
    message.insert(message.end(), from, from + sge.length);
  }
  if (inline_data && message.size() > kMaxInline) return refuse("ibv_post_send", EINVAL, "inline data over 256 bytes");
  return 0;
}

}  // namespace

int post_send(ibv_qp* q, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* qp = qp_of(q);
  Context* ctx = ctx_of(q->context);
  thread_local std::vector<std::byte> message;
  for (; wr; wr = wr->next) {
    std::uint32_t psn = 0;
    bool deliverable = true;
    {
      std::lock_guard lock(ctx->mu);
      if (stack_failed()) fail_context(*ctx);
      int err = 0;
      if (q->state != IBV_QPS_RTS) err = refuse("ibv_post_send", EINVAL, "the queue pair is not in RTS");
      // macOS offers two-sided SEND/RECV only: no RDMA WRITE or READ, no atomics (REFERENCE.md).
      else if (wr->opcode != IBV_WR_SEND)
        err = refuse("ibv_post_send", EOPNOTSUPP, "only IBV_WR_SEND exists on macOS's RDMA stack");
      else
        err = gather(*ctx, *qp, *wr, message);
      if (err) {
        *bad = wr;
        return err;
      }
      const std::size_t mtu = mtu_bytes(qp->path_mtu);
      const std::size_t packets = message.empty() ? 1 : (message.size() + mtu - 1) / mtu;
      psn = qp->sq_psn;
      deliverable = !ctx->port_down;
      qp->sq_psn = static_cast<std::uint32_t>((psn + packets) & 0xffffff);
    }
    // A frame over the stack's maximum (4 KiB on macOS 26.2, up to 512 KiB on
    // 26.3; REFERENCE.md), or sent while the port is DOWN, never reaches the
    // peer, and UC tells nobody.
    if (message.size() <= config().max_frame && deliverable) send_packets(*ctx, *qp, message, psn);
    if (qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED)) {
      std::lock_guard lock(ctx->mu);
      ibv_wc wc = completion(*qp, wr->wr_id, IBV_WC_SUCCESS, IBV_WC_SEND);
      wc.byte_len = static_cast<std::uint32_t>(message.size());
      complete(*cq_of(q->send_cq), wc);
    }
  }
  return 0;
}

int post_recv(ibv_qp* q, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* qp = qp_of(q);
  Context* ctx = ctx_of(q->context);
  std::lock_guard lock(ctx->mu);
  for (; wr; wr = wr->next) {
    int err = 0;
    if (q->state == IBV_QPS_RESET || q->state == IBV_QPS_ERR)
      err = refuse("ibv_post_recv", EINVAL, "the queue pair is in RESET or ERR");
    // macOS refuses ibv_post_recv before the QP reaches RTS (REFERENCE.md).
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
