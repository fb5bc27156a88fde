// The wire: UC packets as UDP datagrams between contexts' sockets, and the
// receiver thread that reassembles them into posted receives as UC does:
// in PSN order, a whole message or nothing.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "hw/softrdma/internal.hpp"
#include "hw/softrdma/stack_failure.hpp"

namespace softrdma {

namespace {

constexpr std::uint32_t kMagic = 0x53524431;  // "SRD1"
enum Op : std::uint8_t { kFirst, kMiddle, kLast, kOnly };

struct Header {
  std::uint32_t magic, dst_qpn, src_qpn, psn;
  std::uint8_t op, pad[3];
};
static_assert(sizeof(Header) == 20);

constexpr std::size_t kMaxPacket = sizeof(Header) + 4096;
constexpr int kBatch = 64;     // datagrams to a sendmmsg or recvmmsg
constexpr int kCheckMs = 100;  // how often an idle receiver looks at the failure switch, the port and the fault file

std::uint32_t next_psn(std::uint32_t psn) { return (psn + 1) & 0xffffff; }

// Copies `data` into `w`'s scatter list at byte `offset`.
void scatter(const RecvWqe& w, std::size_t offset, const std::byte* data, std::size_t n) {
  for (const ibv_sge& sge : w.sges) {
    if (n == 0) break;
    if (offset >= sge.length) {
      offset -= sge.length;
      continue;
    }
    const std::size_t take = std::min<std::size_t>(n, sge.length - offset);
    std::memcpy(reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(sge.addr)) + offset, data, take);
    data += take, n -= take, offset = 0;
  }
}

// One packet for `qp`. REQUIRES: ctx.mu is held.
void deliver(Qp& qp, const Header& h, const std::byte* payload, std::size_t n) {
  const std::size_t mtu = mtu_bytes(qp.path_mtu);
  const bool starts = h.op == kFirst || h.op == kOnly, ends = h.op == kLast || h.op == kOnly;
  // A packet not sized for this end's path MTU is malformed here: both ends must
  // agree on the MTU, or every multi-packet message is lost (IB spec, C9-xx packet length checks).
  if ((ends ? n > mtu : n != mtu) || h.op > kOnly) {
    qp.in_message = false;
    return;
  }
  if (starts) {
    qp.in_message = false;      // a message cut short by loss is dropped whole
    if (qp.rq.empty()) return;  // UC: a SEND that finds no posted receive is dropped silently
    qp.in_message = true;
    qp.received = 0;
  } else if (!qp.in_message || h.psn != qp.expected_psn) {
    qp.in_message = false;  // out of sequence: the rest of this message is lost
    return;
  }
  qp.expected_psn = next_psn(h.psn);
  RecvWqe& w = qp.rq.front();
  Cq& cq = *cq_of(qp.base.recv_cq);
  if (qp.received + n > w.capacity) {  // local length error: the WQE fails and the QP with it
    complete(cq, completion(qp, w.wr_id, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV));
    qp.rq.pop_front();
    for (const RecvWqe& rest : qp.rq) complete(cq, completion(qp, rest.wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV));
    qp.rq.clear();
    qp.in_message = false;
    qp.base.state = IBV_QPS_ERR;
    return;
  }
  scatter(w, qp.received, payload, n);
  qp.received += n;
  if (!ends) return;
  ibv_wc wc = completion(qp, w.wr_id, IBV_WC_SUCCESS, IBV_WC_RECV);
  wc.byte_len = static_cast<std::uint32_t>(qp.received);
  qp.rq.pop_front();
  qp.in_message = false;
  complete(cq, wc);
}

// One datagram from `from`. REQUIRES: ctx.mu is held.
void receive(Context& ctx, const sockaddr_in& from, const std::byte* data, std::size_t n) {
  Header h;
  if (n < sizeof h) return;
  std::memcpy(&h, data, sizeof h);
  h.magic = ntohl(h.magic), h.dst_qpn = ntohl(h.dst_qpn), h.src_qpn = ntohl(h.src_qpn), h.psn = ntohl(h.psn);
  if (h.magic != kMagic || (h.dst_qpn >> 8) != ctx.udp_port) return;
  Qp* qp = ctx.qps[h.dst_qpn & 0xff];
  if (ctx.failed || ctx.port_down || !qp || qp->base.qp_num != h.dst_qpn) return;
  if (qp->base.state != IBV_QPS_RTR && qp->base.state != IBV_QPS_RTS) return;
  // A connected QP hears only its remote QP.
  if (h.src_qpn != qp->dest_qpn || from.sin_addr.s_addr != qp->remote.sin_addr.s_addr ||
      from.sin_port != qp->remote.sin_port)
    return;
  deliver(*qp, h, data + sizeof h, n - sizeof h);
}

void receive_loop(Context& ctx) {
  while (!ctx.stopping.load()) {
    pollfd fds[2] = {{ctx.sock, POLLIN, 0}, {ctx.wake[0], POLLIN, 0}};
    if (poll(fds, 2, kCheckMs) < 0 || ctx.stopping.load()) continue;
    watch_port(ctx);
    watch_fault_file(ctx);
    if (stack_failed()) {
      std::lock_guard lock(ctx.mu);
      fail_context(ctx);
    }
    receive_waiting(ctx, /*if_nobody_reads=*/false);
  }
}

// SOFTRDMA_LOSS and SOFTRDMA_REORDER: each packet may be lost, or held back
// (one per QP at a time) and sent right after the QP's next packet.
void send_with_faults(Context& ctx, Qp& qp, mmsghdr* msgs, int batch) {
  std::lock_guard lock(ctx.faults_mu);
  std::uniform_real_distribution<double> chance(0, 1);
  for (int i = 0; i < batch; ++i) {
    if (chance(ctx.rng) < ctx.faults.loss) continue;
    const msghdr& m = msgs[i].msg_hdr;
    if (qp.held.empty() && chance(ctx.rng) < ctx.faults.reorder) {
      for (std::size_t v = 0; v < m.msg_iovlen; ++v) {
        const auto* from = static_cast<const std::byte*>(m.msg_iov[v].iov_base);
        qp.held.insert(qp.held.end(), from, from + m.msg_iov[v].iov_len);
      }
      continue;
    }
    (void)sendmsg(ctx.sock, &m, 0);  // a packet the kernel refuses is lost, as on a dead link
    if (qp.held.empty()) continue;
    (void)sendto(ctx.sock, qp.held.data(), qp.held.size(), 0, static_cast<const sockaddr*>(m.msg_name), m.msg_namelen);
    qp.held.clear();
  }
}

}  // namespace

void receive_waiting(Context& ctx, bool if_nobody_reads) {
  std::unique_lock reading(ctx.receive_mu, std::defer_lock);
  if (!if_nobody_reads)
    reading.lock();
  else if (!reading.try_lock())
    return;
  ctx.receive_buffer.resize(kBatch * kMaxPacket);
  std::byte* buffers = ctx.receive_buffer.data();
  mmsghdr msgs[kBatch];
  iovec iov[kBatch];
  sockaddr_in from[kBatch];
  for (;;) {
    for (int i = 0; i < kBatch; ++i) {
      iov[i] = {buffers + i * kMaxPacket, kMaxPacket};
      msgs[i] = {};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &from[i];
      msgs[i].msg_hdr.msg_namelen = sizeof from[i];
    }
    const int got = recvmmsg(ctx.sock, msgs, kBatch, MSG_DONTWAIT, nullptr);
    if (got <= 0) return;
    std::lock_guard lock(ctx.mu);
    for (int i = 0; i < got; ++i)
      if (!(msgs[i].msg_hdr.msg_flags & MSG_TRUNC)) receive(ctx, from[i], buffers + i * kMaxPacket, msgs[i].msg_len);
  }
}

int send_packets(Context& ctx, Qp& qp, std::span<const OutgoingSend> sends) {
  const std::size_t mtu = mtu_bytes(qp.path_mtu);
  static thread_local Header headers[kBatch];
  static thread_local iovec iov[kBatch][2];
  static thread_local mmsghdr msgs[kBatch];
  bool faulty;  // the rates may change under us (SOFTRDMA_FAULT_FILE); a packet held back still goes
  {
    std::lock_guard lock(ctx.faults_mu);
    faulty = ctx.faults.any() || !qp.held.empty();
  }
  int batch = 0;
  auto flush = [&]() -> int {
    if (faulty) send_with_faults(ctx, qp, msgs, batch);
    for (int sent = 0; !faulty && sent < batch;) {
      const int n = sendmmsg(ctx.sock, msgs + sent, static_cast<unsigned>(batch - sent), 0);
      if (n <= 0) return errno;  // the packets are lost, as on a dead link
      sent += n;
    }
    batch = 0;
    return 0;
  };
  for (const OutgoingSend& send : sends) {
    const std::span<const std::byte> message = send.message;
    const std::size_t packets = message.empty() ? 1 : (message.size() + mtu - 1) / mtu;
    std::uint32_t psn = send.first_psn;
    for (std::size_t p = 0; p < packets; ++p) {
      const std::size_t offset = p * mtu, n = std::min(mtu, message.size() - std::min(offset, message.size()));
      const bool first = p == 0, last = p + 1 == packets;
      headers[batch] = {htonl(kMagic), htonl(qp.dest_qpn), htonl(qp.base.qp_num), htonl(psn), 0, {}};
      headers[batch].op = first && last ? kOnly : first ? kFirst : last ? kLast : kMiddle;
      psn = next_psn(psn);
      iov[batch][0] = {&headers[batch], sizeof(Header)};
      iov[batch][1] = {const_cast<std::byte*>(message.data()) + offset, n};
      msgs[batch] = {};
      msgs[batch].msg_hdr.msg_name = &qp.remote;
      msgs[batch].msg_hdr.msg_namelen = sizeof qp.remote;
      msgs[batch].msg_hdr.msg_iov = iov[batch];
      msgs[batch].msg_hdr.msg_iovlen = 2;
      if (++batch == kBatch)
        if (const int err = flush()) return err;
    }
  }
  return batch > 0 ? flush() : 0;
}

void start_receiver(Context& ctx) {
  ctx.receiver = std::thread([&ctx] { receive_loop(ctx); });
}

void stop_receiver(Context& ctx) {
  ctx.stopping = true;
  const char byte = 1;
  (void)!write(ctx.wake[1], &byte, 1);
  if (ctx.receiver.joinable()) ctx.receiver.join();
}

bool ipv4_of_gid(const ibv_gid& gid, in_addr* addr) {
  static constexpr std::uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(gid.raw, kPrefix, sizeof kPrefix) != 0) return false;
  std::memcpy(addr, gid.raw + 12, 4);
  return true;
}

ibv_gid ipv4_mapped_gid(in_addr addr) {
  ibv_gid gid{};
  gid.raw[10] = gid.raw[11] = 0xff;
  std::memcpy(gid.raw + 12, &addr, 4);
  return gid;
}

}  // namespace softrdma
