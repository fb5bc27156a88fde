#include "softrdma_fixture.hpp"

#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

namespace softrdma_test {

std::vector<std::string> preloaded(std::vector<std::string> settings, const std::vector<std::string>& argv) {
  settings.insert(settings.begin(), {"/usr/bin/env", std::string("LD_PRELOAD=") + SOFTRDMA_LIBRARY});
  settings.insert(settings.end(), argv.begin(), argv.end());
  return settings;
}

void open_end(End& e, const char* device) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  for (int i = 0; i < n; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), device) == 0) e.ctx = ibv_open_device(list[i]);
  ibv_free_device_list(list);
  ASSERT_NE(e.ctx, nullptr) << "no " << device << " among " << n << " devices";
  ASSERT_NE(e.pd = ibv_alloc_pd(e.ctx), nullptr);
  ASSERT_NE(e.cq = ibv_create_cq(e.ctx, 256, nullptr, nullptr, 0), nullptr);
  ASSERT_NE(e.mr = ibv_reg_mr(e.pd, e.buf.data(), e.buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
            nullptr);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = e.cq;
  init.qp_type = IBV_QPT_UC;
  init.sq_sig_all = 1;
  init.cap.max_send_wr = init.cap.max_recv_wr = 64;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  ASSERT_NE(e.qp = ibv_create_qp(e.pd, &init), nullptr);
}

void close_end(End& e) {
  if (e.qp) ibv_destroy_qp(e.qp);
  if (e.mr) ibv_dereg_mr(e.mr);
  if (e.cq) ibv_destroy_cq(e.cq);
  if (e.pd) ibv_dealloc_pd(e.pd);
  if (e.ctx) ibv_close_device(e.ctx);
  e = End{};
}

int to_init(End& e) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  return ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int connect(End& local, const End& remote, ibv_mtu mtu) {
  if (int err = to_init(local)) return err;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu;
  a.dest_qp_num = remote.qp->qp_num;
  a.rq_psn = 7;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.sgid_index = 1;
  if (int err = ibv_query_gid(remote.ctx, 1, 1, &a.ah_attr.grh.dgid)) return err;
  if (int err =
          ibv_modify_qp(local.qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
    return err;
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 7;
  return ibv_modify_qp(local.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

int post_recv(End& e, std::size_t offset, std::size_t bytes, std::uint64_t wr_id) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(e.buf.data() + offset), static_cast<std::uint32_t>(bytes), e.mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(e.qp, &wr, &bad);
}

int post_send(End& e, std::size_t offset, std::size_t bytes, std::uint64_t wr_id, ibv_wr_opcode op) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(e.buf.data() + offset), static_cast<std::uint32_t>(bytes), e.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(e.qp, &wr, &bad);
}

std::vector<ibv_wc> poll(End& e, int want, double timeout_s) {
  std::vector<ibv_wc> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (static_cast<int>(got.size()) < want && std::chrono::steady_clock::now() < deadline) {
    ibv_wc wc[8];
    const int n = ibv_poll_cq(e.cq, 8, wc);
    got.insert(got.end(), wc, wc + std::max(n, 0));
    if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return got;
}

int wait_child(pid_t pid, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool port_active_within(const char* device, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    bool active = false;
    for (int i = 0; list && i < n; ++i) {
      if (std::strcmp(ibv_get_device_name(list[i]), device) != 0) continue;
      if (ibv_context* c = ibv_open_device(list[i])) {
        ibv_port_attr attr{};
        active = ibv_query_port(c, 1, &attr) == 0 && attr.state == IBV_PORT_ACTIVE;
        ibv_close_device(c);
      }
    }
    if (list) ibv_free_device_list(list);
    if (active) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace softrdma_test
