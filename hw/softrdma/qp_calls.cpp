// Queue pairs: UC only, attribute masks checked per transition.
#include <cerrno>
#include <cstring>

#include "hw/softrdma/config.hpp"
#include "hw/softrdma/export.hpp"
#include "hw/softrdma/interfaces.hpp"
#include "hw/softrdma/internal.hpp"

namespace softrdma {
namespace {

struct Transition {
  int required, optional;
};

// `man ibv_modify_qp` (UC table) and the kernel's qp_state_table for UC.
// IBV_QP_STATE is always allowed; leaving it out keeps the current state.
bool transition(ibv_qp_state from, ibv_qp_state to, Transition* t) {
  constexpr int kRtsOptional = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE;
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return *t = {0, 0}, true;
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
    return *t = {IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0}, true;
  if (from == IBV_QPS_INIT && to == IBV_QPS_INIT)
    return *t = {0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS}, true;
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
    return *t = {IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
                 IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
           true;
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) return *t = {IBV_QP_SQ_PSN, kRtsOptional}, true;
  if (from == IBV_QPS_RTS && to == IBV_QPS_RTS) return *t = {0, kRtsOptional}, true;
  return false;
}

const char* state_name(ibv_qp_state s) {
  static const char* names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  return s <= IBV_QPS_ERR ? names[s] : "UNKNOWN";
}

// Fails every posted receive, as a QP entering ERR flushes its queue.
void flush(Qp& qp) {
  Cq* cq = cq_of(qp.base.recv_cq);
  for (const RecvWqe& w : qp.rq) complete(*cq, completion(qp, w.wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV));
  qp.rq.clear();
  qp.in_message = false;
}

// The RTR address: RoCE routes by GID, so the GRH is required (IBV_QPF_GRH_REQUIRED),
// and frames travel as UDP/IPv4, so both GIDs must be IPv4-mapped.
int set_path(Context& ctx, Qp& qp, const ibv_qp_attr& a) {
  const char* call = "ibv_modify_qp(RTR)";
  if (!a.ah_attr.is_global) return refuse(call, EINVAL, "no GRH: RoCE routes by GID (set ah_attr.is_global)");
  if (a.ah_attr.grh.sgid_index != kIpv4GidIndex)
    return refuse(call, EINVAL,
                  "sgid_index " + std::to_string(a.ah_attr.grh.sgid_index) +
                      " is not the IPv4-mapped GID (index 1), the one macOS routes");
  in_addr dst{};
  if (!ipv4_of_gid(a.ah_attr.grh.dgid, &dst)) return refuse(call, EINVAL, "the destination GID is not IPv4-mapped");
  const std::optional<Interface> i = find_interface(ctx.device->ifname);
  if (a.path_mtu > ib_mtu_for(i ? i->mtu : 1500))
    return refuse(call, EINVAL, "path_mtu " + std::to_string(mtu_bytes(a.path_mtu)) + " above the port's MTU");
  qp.ah = a.ah_attr;
  qp.remote = {};
  qp.remote.sin_family = AF_INET;
  qp.remote.sin_addr = dst;
  qp.remote.sin_port = htons(static_cast<std::uint16_t>(a.dest_qp_num >> 8));
  return 0;
}

}  // namespace
}  // namespace softrdma

using namespace softrdma;

extern "C" {

SOFTRDMA_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  // macOS offers UC only; an RC queue pair fails with EOPNOTSUPP (errno 102 there; MLX JACCL reports,
  // docs/reference-facts.md#what-other-tools-do-on-failure).
  if (init->qp_type != IBV_QPT_UC) {
    refuse("ibv_create_qp", EOPNOTSUPP, "only UC queue pairs exist on macOS's RDMA stack");
    return nullptr;
  }
  if (init->srq || !init->send_cq || !init->recv_cq) {
    refuse("ibv_create_qp", EINVAL, "needs a send and a receive CQ and no SRQ");
    return nullptr;
  }
  const ibv_qp_cap& cap = init->cap;
  if (cap.max_send_wr > 4096 || cap.max_recv_wr > 4096 || cap.max_send_sge > 8 || cap.max_recv_sge > 8 ||
      cap.max_inline_data > kMaxInline) {
    refuse("ibv_create_qp", EINVAL, "capabilities beyond 4096 WRs, 8 SGEs, 256 inline bytes");
    return nullptr;
  }
  Context* ctx = ctx_of(pd->context);
  std::lock_guard lock(ctx->mu);
  int slot = 1;
  while (slot <= kMaxQpsPerContext && ctx->qps[slot]) ++slot;
  if (slot > kMaxQpsPerContext) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* qp = new Qp;
  std::memset(&qp->base, 0, sizeof qp->base);
  qp->base.context = pd->context;
  qp->base.qp_context = init->qp_context;
  qp->base.pd = pd;
  qp->base.send_cq = init->send_cq;
  qp->base.recv_cq = init->recv_cq;
  qp->base.qp_num = std::uint32_t{ctx->udp_port} << 8 | static_cast<std::uint32_t>(slot);
  qp->base.state = IBV_QPS_RESET;
  qp->base.qp_type = IBV_QPT_UC;
  pthread_mutex_init(&qp->base.mutex, nullptr);
  pthread_cond_init(&qp->base.cond, nullptr);
  qp->cap = cap;
  qp->cap.max_inline_data = kMaxInline;
  init->cap.max_inline_data = kMaxInline;
  qp->sq_sig_all = init->sq_sig_all != 0;
  qp->slot = slot;
  ctx->qps[slot] = qp;
  return &qp->base;
}

SOFTRDMA_EXPORT int ibv_modify_qp(ibv_qp* q, ibv_qp_attr* a, int mask) {
  Qp* qp = qp_of(q);
  Context* ctx = ctx_of(q->context);
  std::lock_guard lock(ctx->mu);
  const ibv_qp_state from = q->state;
  const ibv_qp_state to = (mask & IBV_QP_STATE) ? a->qp_state : from;
  if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != from)
    return refuse("ibv_modify_qp", EINVAL, std::string("cur_qp_state is not ") + state_name(from));
  Transition t{};
  if (!transition(from, to, &t))
    return refuse("ibv_modify_qp", EINVAL, std::string(state_name(from)) + " -> " + state_name(to) + " on UC");
  const int given = mask & ~IBV_QP_STATE;
  if ((given & t.required) != t.required || (given & ~(t.required | t.optional)))
    return refuse("ibv_modify_qp", EINVAL,
                  std::string(state_name(from)) + " -> " + state_name(to) + ": attribute mask " + std::to_string(mask) +
                      " is not what `man ibv_modify_qp` lists for UC");
  if ((mask & IBV_QP_PORT) && a->port_num != 1) return refuse("ibv_modify_qp", EINVAL, "no such port");
  if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0) return refuse("ibv_modify_qp", EINVAL, "no such pkey index");
  if (mask & IBV_QP_AV)
    if (int err = set_path(*ctx, *qp, *a)) return err;
  if (mask & IBV_QP_ACCESS_FLAGS) qp->access = static_cast<int>(a->qp_access_flags);
  if (mask & IBV_QP_PATH_MTU) qp->path_mtu = a->path_mtu;
  if (mask & IBV_QP_DEST_QPN) qp->dest_qpn = a->dest_qp_num;
  if (mask & IBV_QP_RQ_PSN) qp->rq_psn = qp->expected_psn = a->rq_psn & 0xffffff;
  if (mask & IBV_QP_SQ_PSN) qp->sq_psn = a->sq_psn & 0xffffff;
  if (to == IBV_QPS_ERR && from != IBV_QPS_ERR) flush(*qp);
  if (to == IBV_QPS_RESET) qp->rq.clear(), qp->in_message = false;
  q->state = to;
  return 0;
}

SOFTRDMA_EXPORT int ibv_query_qp(ibv_qp* q, ibv_qp_attr* a, int, ibv_qp_init_attr* init) {
  Qp* qp = qp_of(q);
  std::lock_guard lock(ctx_of(q->context)->mu);
  std::memset(a, 0, sizeof *a);
  a->qp_state = a->cur_qp_state = q->state;
  a->path_mtu = qp->path_mtu;
  a->rq_psn = qp->rq_psn;
  a->sq_psn = qp->sq_psn;
  a->dest_qp_num = qp->dest_qpn;
  a->qp_access_flags = static_cast<unsigned>(qp->access);
  a->cap = qp->cap;
  a->ah_attr = qp->ah;
  a->port_num = qp->port;
  std::memset(init, 0, sizeof *init);
  init->qp_context = q->qp_context;
  init->send_cq = q->send_cq;
  init->recv_cq = q->recv_cq;
  init->cap = qp->cap;
  init->qp_type = IBV_QPT_UC;
  init->sq_sig_all = qp->sq_sig_all;
  return 0;
}

SOFTRDMA_EXPORT int ibv_destroy_qp(ibv_qp* q) {
  Qp* qp = qp_of(q);
  Context* ctx = ctx_of(q->context);
  {
    std::lock_guard lock(ctx->mu);
    ctx->qps[qp->slot] = nullptr;
  }
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->mutex);
  delete qp;
  return 0;
}

}  // extern "C"
