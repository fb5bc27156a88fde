#include "hw/verbs/rule_kit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace hw::rule_kit {

namespace {
// The transport's access, plus REMOTE_WRITE so a refused RDMA WRITE is the stack's rule, not the key's.
constexpr int kMrAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
constexpr std::size_t kBufferBytes = 1048576;
}  // namespace

std::string errno_text(int e) { return fmt::format("errno {} ({})", e, std::strerror(e)); }

Side::Side(VerbsApi& a, const std::string& device) : api(a), buf(kBufferBytes) {
  if (!(ctx = api.open_device(device))) return;
  if ((pd = api.alloc_pd(ctx))) mr = api.reg_mr(pd, buf.data(), buf.size(), kMrAccess);
}

Side::~Side() {
  if (mr) api.dereg_mr(mr);
  if (pd) api.dealloc_pd(pd);
  if (ctx) api.close_device(ctx);
}

Qp::Qp(Side& s, ibv_qp_type type) : api(s.api), side(s) {
  if (!(cq = api.create_cq(s.ctx, 16, nullptr))) return;
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = cq;
  init.qp_type = type;
  init.sq_sig_all = 1;
  init.cap.max_send_wr = init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  qp = api.create_qp(s.pd, &init);
  error = errno;
}

Qp::~Qp() {
  if (qp) api.destroy_qp(qp);
  if (cq) api.destroy_cq(cq);
}

int to_init(Qp& q, const PortChoice& port) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = port.port;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  return q.api.modify_qp(q.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int to_rtr(Qp& q, std::uint32_t remote_qpn, const std::array<std::uint8_t, 16>& remote_gid, const PortChoice& port,
           ibv_mtu mtu) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu;
  a.dest_qp_num = remote_qpn;
  a.rq_psn = 0;
  a.ah_attr.dlid = port.lid;
  a.ah_attr.port_num = port.port;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(port.gid_index);
  std::copy(remote_gid.begin(), remote_gid.end(), a.ah_attr.grh.dgid.raw);
  return q.api.modify_qp(q.qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
}

int to_rts(Qp& q) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  return q.api.modify_qp(q.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

int post_recv(Qp& q, std::size_t bytes) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(q.side.buf.data()), static_cast<std::uint32_t>(bytes), q.side.mr->lkey};
  ibv_recv_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return q.api.post_recv(q.qp, &wr, &bad);
}

std::optional<ibv_wc> completion(Qp& q, double wait_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  do {
    ibv_wc wc{};
    if (q.api.poll_cq(q.cq, 1, &wc) == 1) return wc;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  } while (std::chrono::steady_clock::now() < until);
  return std::nullopt;
}

int post_frame(Qp& q, std::size_t bytes, ibv_wr_opcode op, std::uintptr_t remote_addr, std::uint32_t rkey) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(q.side.buf.data()), static_cast<std::uint32_t>(bytes), q.side.mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  return q.api.post_send(q.qp, &wr, &bad);
}

Delivery landed(Qp& receiver, std::size_t bytes, ibv_wr_opcode op, double wait_s) {
  const std::vector<std::byte>& buf = receiver.side.buf;
  const auto whole = [&] {
    for (std::size_t i = 0; i < bytes; ++i)
      if (buf[i] != pattern(i)) return false;
    return true;
  };
  if (op != IBV_WR_SEND) {  // nothing completes at the target of an RDMA WRITE: look at the bytes
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    while (!whole() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return whole() ? Delivery{true, "the bytes landed"} : Delivery{false, "completed, nothing landed"};
  }
  const std::optional<ibv_wc> got = completion(receiver, wait_s);
  if (!got) return {false, "dropped"};
  if (got->status != IBV_WC_SUCCESS) return {false, fmt::format("receive {}", ibv_wc_status_str(got->status))};
  const bool intact = got->byte_len == bytes && whole();
  return {intact, intact ? "crossed" : "arrived altered"};
}

}  // namespace hw::rule_kit
