// Completion queues and completion channels. A channel is a pipe: one byte
// per event, so its fd can be polled or read blocking like a kernel one.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hw/softrdma/export.hpp"
#include "hw/softrdma/internal.hpp"

namespace softrdma {

namespace {
Channel* channel_of(ibv_comp_channel* c) { return reinterpret_cast<Channel*>(c); }
}  // namespace

ibv_wc completion(const Qp& qp, std::uint64_t wr_id, ibv_wc_status status, ibv_wc_opcode opcode) {
  ibv_wc wc{};
  wc.wr_id = wr_id;
  wc.status = status;
  wc.opcode = opcode;
  wc.qp_num = qp.base.qp_num;
  wc.src_qp = qp.dest_qpn;
  return wc;
}

void complete(Cq& cq, const ibv_wc& wc) {
  cq.wcs.push_back(wc);
  if (!cq.armed || !cq.base.channel) return;
  cq.armed = false;
  Channel* ch = channel_of(cq.base.channel);
  std::lock_guard lock(ch->mu);
  ch->events.push_back(&cq);
  const char byte = 1;
  (void)!write(ch->write_fd, &byte, 1);
}

namespace {

int take_completions(Cq& cq, Context& ctx, int entries, ibv_wc* wc) {
  std::lock_guard lock(ctx.mu);
  const int n = std::min<int>(entries, static_cast<int>(cq.wcs.size()));
  for (int i = 0; i < n; ++i) {
    wc[i] = cq.wcs.front();
    cq.wcs.pop_front();
  }
  return n;
}

}  // namespace

// Reads the socket first, as a kernel-bypass device's poll finds what the
// NIC wrote: on a loaded host the receiver thread may wait long to run.
int poll_cq(ibv_cq* c, int entries, ibv_wc* wc) {
  Context& ctx = *ctx_of(c->context);
  receive_waiting(ctx, /*if_nobody_reads=*/true);
  return take_completions(*cq_of(c), ctx, entries, wc);
}

// Solicited-only is treated as any completion: UC SENDs here carry no solicited bit.
int req_notify_cq(ibv_cq* c, int) {
  std::lock_guard lock(ctx_of(c->context)->mu);
  cq_of(c)->armed = true;
  return 0;
}

}  // namespace softrdma

using namespace softrdma;

extern "C" {

SOFTRDMA_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* c) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  auto* ch = new Channel;
  ch->base.context = c;
  ch->base.fd = fds[0];
  ch->base.refcnt = 0;
  ch->write_fd = fds[1];
  return &ch->base;
}

SOFTRDMA_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* c) {
  if (c->refcnt) return EBUSY;
  Channel* ch = channel_of(c);
  close(ch->base.fd);
  close(ch->write_fd);
  delete ch;
  return 0;
}

SOFTRDMA_EXPORT ibv_cq* ibv_create_cq(ibv_context* c, int cqe, void* cq_context, ibv_comp_channel* channel,
                                      int comp_vector) {
  if (cqe < 1 || cqe > 65536 || comp_vector != 0) {
    errno = EINVAL;
    return nullptr;
  }
  auto* cq = new Cq;
  std::memset(&cq->base, 0, sizeof cq->base);
  cq->base.context = c;
  cq->base.channel = channel;
  cq->base.cq_context = cq_context;
  cq->base.cqe = cqe;
  pthread_mutex_init(&cq->base.mutex, nullptr);
  pthread_cond_init(&cq->base.cond, nullptr);
  if (channel) ++channel->refcnt;
  return &cq->base;
}

SOFTRDMA_EXPORT int ibv_destroy_cq(ibv_cq* c) {
  Cq* cq = cq_of(c);
  if (c->channel) {
    Channel* ch = channel_of(c->channel);
    std::lock_guard lock(ch->mu);
    std::erase(ch->events, cq);
    --c->channel->refcnt;
  }
  pthread_cond_destroy(&c->cond);
  pthread_mutex_destroy(&c->mutex);
  delete cq;
  return 0;
}

SOFTRDMA_EXPORT int ibv_get_cq_event(ibv_comp_channel* c, ibv_cq** cq, void** cq_context) {
  char byte;
  if (read(c->fd, &byte, 1) != 1) return -1;
  Channel* ch = channel_of(c);
  std::lock_guard lock(ch->mu);
  if (ch->events.empty()) return -1;  // its CQ was destroyed meanwhile
  Cq* got = ch->events.front();
  ch->events.pop_front();
  *cq = &got->base;
  *cq_context = got->base.cq_context;
  return 0;
}

SOFTRDMA_EXPORT void ibv_ack_cq_events(ibv_cq* cq, unsigned int n) { cq->comp_events_completed += n; }

}  // extern "C"
