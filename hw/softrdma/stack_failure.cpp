#include "hw/softrdma/stack_failure.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "hw/softrdma/internal.hpp"

namespace softrdma {

bool stack_failed() {
  static std::atomic<bool> failed{false};
  if (failed.load()) return true;
  const char* path = std::getenv("SOFTRDMA_FAIL_FILE");
  if (path && *path && access(path, F_OK) == 0) failed = true;
  return failed.load();
}

void fail_context(Context& ctx) {
  if (ctx.failed) return;
  ctx.failed = true;
  for (Qp* qp : ctx.qps) {
    if (!qp || qp->base.state == IBV_QPS_RESET) continue;
    Cq& cq = *cq_of(qp->base.recv_cq);
    for (const RecvWqe& w : qp->rq) complete(cq, completion(*qp, w.wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV));
    qp->rq.clear();
    qp->in_message = false;
    qp->base.state = IBV_QPS_ERR;
  }
  ibv_async_event event{};
  event.event_type = IBV_EVENT_DEVICE_FATAL;
  post_async_event(ctx, event);
}

}  // namespace softrdma
