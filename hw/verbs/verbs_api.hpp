// The libibverbs calls the verbs transport makes, behind an interface so the
// order of setup and of the queue pair's state changes can be checked without
// a device. The real implementation (libibverbs()) calls each function
// one-to-one; the same names exist in macOS's librdma.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hw {

class VerbsApi {
 public:
  virtual ~VerbsApi() = default;

  // ibv_get_device_list + ibv_get_device_name.
  virtual std::vector<std::string> device_names() = 0;
  // ibv_open_device on the device called `name`; nullptr when there is none.
  virtual ibv_context* open_device(const std::string& name) = 0;
  virtual int close_device(ibv_context* context) = 0;
  virtual int query_device(ibv_context* context, ibv_device_attr* attr) = 0;
  virtual int query_port(ibv_context* context, std::uint8_t port, ibv_port_attr* attr) = 0;
  virtual int query_gid(ibv_context* context, std::uint8_t port, int index, ibv_gid* gid) = 0;
  // ibv_query_gid_ex: the GID at `index` and whether it is RoCE v2. Returns 0, an
  // errno (ENODATA: an empty entry), or EOPNOTSUPP where the library lacks the call.
  virtual int query_gid_ex(ibv_context* context, std::uint8_t port, std::uint32_t index, ibv_gid* gid,
                           bool* roce_v2) = 0;
  // The next asynchronous event of `context` (ibv_get_async_event once its fd
  // is readable) without blocking: 0, or -1 when none waits. Ack each one.
  virtual int next_async_event(ibv_context* context, ibv_async_event* event) = 0;
  virtual void ack_async_event(ibv_async_event* event) = 0;
  virtual ibv_pd* alloc_pd(ibv_context* context) = 0;
  virtual int dealloc_pd(ibv_pd* pd) = 0;
  // nullptr where the device has no completion channels: callers then poll.
  virtual ibv_comp_channel* create_comp_channel(ibv_context* context) = 0;
  virtual int destroy_comp_channel(ibv_comp_channel* channel) = 0;
  virtual ibv_cq* create_cq(ibv_context* context, int entries, ibv_comp_channel* channel) = 0;
  virtual int destroy_cq(ibv_cq* cq) = 0;
  virtual int req_notify_cq(ibv_cq* cq) = 0;
  virtual int get_cq_event(ibv_comp_channel* channel, ibv_cq** cq) = 0;
  virtual void ack_cq_events(ibv_cq* cq, unsigned int events) = 0;
  virtual ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) = 0;
  virtual int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) = 0;
  virtual int destroy_qp(ibv_qp* qp) = 0;
  virtual ibv_mr* reg_mr(ibv_pd* pd, void* addr, std::size_t length, int access) = 0;
  virtual int dereg_mr(ibv_mr* mr) = 0;
  virtual int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) = 0;
  virtual int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) = 0;
  virtual int poll_cq(ibv_cq* cq, int entries, ibv_wc* wc) = 0;
};

// The process-wide implementation on rdma-core's libibverbs.
VerbsApi& libibverbs();

}  // namespace hw
