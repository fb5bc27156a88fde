// Protection domains and memory regions. Frames are copied from and into the
// registered ranges, so registration only records them and checks the rules.
#include <cerrno>
#include <cstring>

#include "hw/softrdma/config.hpp"
#include "hw/softrdma/export.hpp"
#include "hw/softrdma/internal.hpp"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace softrdma {

bool sge_in_mr(Context& ctx, const ibv_sge& sge, int access) {
  const auto it = ctx.mrs.find(sge.lkey);
  if (it == ctx.mrs.end() || (it->second->access & access) != access) return false;
  const auto* mr = &it->second->base;
  const auto begin = reinterpret_cast<std::uintptr_t>(mr->addr);
  return sge.addr >= begin && sge.addr + sge.length <= begin + mr->length;
}

}  // namespace softrdma

using namespace softrdma;

extern "C" {

SOFTRDMA_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* c) {
  auto* pd = new Pd;
  std::memset(&pd->base, 0, sizeof pd->base);
  pd->base.context = c;
  return &pd->base;
}

SOFTRDMA_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
  delete reinterpret_cast<Pd*>(pd);
  return 0;
}

SOFTRDMA_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  constexpr unsigned kKnown = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING;
  if (access & ~kKnown) {
    refuse("ibv_reg_mr", EINVAL, "access flags beyond local/remote read/write");
    return nullptr;
  }
  // IB spec (o10-36.2.1): remote write access requires local write.
  if ((access & IBV_ACCESS_REMOTE_WRITE) && !(access & IBV_ACCESS_LOCAL_WRITE)) {
    refuse("ibv_reg_mr", EINVAL, "REMOTE_WRITE without LOCAL_WRITE");
    return nullptr;
  }
  // macOS's librdma refuses a region registered with LOCAL_WRITE alone
  // (docs/reference-facts.md#macos-rdma-over-thunderbolt).
  if ((access & kKnown & ~IBV_ACCESS_RELAXED_ORDERING) == IBV_ACCESS_LOCAL_WRITE && !config().allow_local_write_mr) {
    refuse("ibv_reg_mr", EINVAL,
           "LOCAL_WRITE alone, as macOS refuses it; add REMOTE_READ or REMOTE_WRITE "
           "(SOFTRDMA_ALLOW=local-write-mr lifts this)");
    return nullptr;
  }
  if (!addr && length) {
    errno = EINVAL;
    return nullptr;
  }
  Context* ctx = ctx_of(pd->context);
  auto* mr = new Mr;
  std::memset(&mr->base, 0, sizeof mr->base);
  mr->access = static_cast<int>(access);
  mr->base.context = pd->context;
  mr->base.pd = pd;
  mr->base.addr = addr;
  mr->base.length = length;
  std::lock_guard lock(ctx->mu);
  mr->base.lkey = mr->base.rkey = ctx->next_key++;
  ctx->mrs[mr->base.lkey] = mr;
  (void)iova;  // only RDMA READ/WRITE address by iova, and they are refused
  return &mr->base;
}

SOFTRDMA_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<std::uintptr_t>(addr), static_cast<unsigned>(access));
}

SOFTRDMA_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
}

SOFTRDMA_EXPORT int ibv_dereg_mr(ibv_mr* m) {
  Context* ctx = ctx_of(m->context);
  {
    std::lock_guard lock(ctx->mu);
    ctx->mrs.erase(m->lkey);
  }
  delete mr_of(m);
  return 0;
}

}  // extern "C"
