#include "hw/verbs/verbs_api.hpp"

#include <poll.h>

#include <cerrno>
#include <memory>

namespace hw {

namespace {

using DeviceList = std::unique_ptr<ibv_device*[], decltype(&ibv_free_device_list)>;

DeviceList device_list() {
  int n = 0;
  return DeviceList(ibv_get_device_list(&n), &ibv_free_device_list);
}

class Libibverbs final : public VerbsApi {
 public:
  std::vector<std::string> device_names() override {
    std::vector<std::string> names;
    DeviceList list = device_list();
    for (int i = 0; list && list[i]; ++i) names.emplace_back(ibv_get_device_name(list[i]));
    return names;
  }
  ibv_context* open_device(const std::string& name) override {
    DeviceList list = device_list();
    for (int i = 0; list && list[i]; ++i)
      if (name == ibv_get_device_name(list[i])) return ibv_open_device(list[i]);
    return nullptr;
  }
  int close_device(ibv_context* c) override { return ibv_close_device(c); }
  int query_device(ibv_context* c, ibv_device_attr* a) override { return ibv_query_device(c, a); }
  int query_port(ibv_context* c, std::uint8_t port, ibv_port_attr* a) override { return ibv_query_port(c, port, a); }
  int query_gid(ibv_context* c, std::uint8_t port, int index, ibv_gid* g) override {
    return ibv_query_gid(c, port, index, g);
  }
  int query_gid_ex(ibv_context* c, std::uint8_t port, std::uint32_t index, ibv_gid* g, bool* roce_v2) override {
#ifdef MESHINFER_HAVE_QUERY_GID_EX
    ibv_gid_entry entry{};
    if (const int err = ibv_query_gid_ex(c, port, index, &entry, 0)) return err;
    *g = entry.gid;
    *roce_v2 = entry.gid_type == IBV_GID_TYPE_ROCE_V2;
    return 0;
#else
    (void)c, (void)port, (void)index, (void)g, (void)roce_v2;
    return EOPNOTSUPP;  // rdma-core before v32, or a library without it
#endif
  }
  int next_async_event(ibv_context* c, ibv_async_event* event) override {
    pollfd fd{c->async_fd, POLLIN, 0};
    return poll(&fd, 1, 0) == 1 ? ibv_get_async_event(c, event) : -1;
  }
  void ack_async_event(ibv_async_event* event) override { ibv_ack_async_event(event); }
  ibv_pd* alloc_pd(ibv_context* c) override { return ibv_alloc_pd(c); }
  int dealloc_pd(ibv_pd* pd) override { return ibv_dealloc_pd(pd); }
  ibv_comp_channel* create_comp_channel(ibv_context* c) override { return ibv_create_comp_channel(c); }
  int destroy_comp_channel(ibv_comp_channel* ch) override { return ibv_destroy_comp_channel(ch); }
  ibv_cq* create_cq(ibv_context* c, int entries, ibv_comp_channel* ch) override {
    return ibv_create_cq(c, entries, nullptr, ch, 0);
  }
  int destroy_cq(ibv_cq* cq) override { return ibv_destroy_cq(cq); }
  int req_notify_cq(ibv_cq* cq) override { return ibv_req_notify_cq(cq, 0); }
  int get_cq_event(ibv_comp_channel* ch, ibv_cq** cq) override {
    void* context = nullptr;
    return ibv_get_cq_event(ch, cq, &context);
  }
  void ack_cq_events(ibv_cq* cq, unsigned int n) override { ibv_ack_cq_events(cq, n); }
  ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* a) override { return ibv_create_qp(pd, a); }
  int modify_qp(ibv_qp* qp, ibv_qp_attr* a, int mask) override { return ibv_modify_qp(qp, a, mask); }
  int destroy_qp(ibv_qp* qp) override { return ibv_destroy_qp(qp); }
  ibv_mr* reg_mr(ibv_pd* pd, void* addr, std::size_t n, int access) override { return ibv_reg_mr(pd, addr, n, access); }
  int dereg_mr(ibv_mr* mr) override { return ibv_dereg_mr(mr); }
  int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) override { return ibv_post_send(qp, wr, bad); }
  int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) override { return ibv_post_recv(qp, wr, bad); }
  int poll_cq(ibv_cq* cq, int n, ibv_wc* wc) override { return ibv_poll_cq(cq, n, wc); }
};

}  // namespace

VerbsApi& libibverbs() {
  static Libibverbs api;
  return api;
}

}  // namespace hw
