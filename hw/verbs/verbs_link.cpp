#include "hw/verbs/verbs_link.hpp"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "hw/verbs/port_choice.hpp"

namespace hw {

namespace {

constexpr std::uint64_t kSendBit = 1ull << 63;  // wr_id of a send; wc.opcode is undefined on errors
// SEND/RECV need LOCAL_WRITE only, but Apple refuses it alone
// (docs/reference-facts.md#macos-rdma-over-thunderbolt):
// REMOTE_READ satisfies it and opens nothing, since UC has no RDMA READ.
// No REMOTE_WRITE: UC does carry RDMA WRITEs, and no peer should place bytes here.
constexpr int kMrAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
constexpr int kPageBytes = 4096;

}  // namespace

VerbsLink::VerbsLink(VerbsApi& api, const std::string& device, const std::string& pair, const VerbsOptions& options,
                     std::uint32_t psn)
    : api_(api), device_(device), pair_(pair), options_(options) {
  context_ = api_.open_device(device);
  if (!context_) {
    const std::vector<std::string> names = api_.device_names();
    fail(fmt::format("no such RDMA device (devices here: {})",
                     names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
  }
  PortChoice port;
  try {
    port = choose_port(api_, context_);
  } catch (const std::runtime_error& e) {
    release();
    fail(e.what());
  }
  port_ = port.port;
  gid_index_ = port.gid_index;
  mtu_ = port.active_mtu;
  local_.mtu = static_cast<std::uint8_t>(mtu_);
  local_.lid = port.lid;
  local_.gid = port.gid;
  try {
    create_queue_pair();
  } catch (...) {
    release();
    throw;
  }
  local_.psn = psn & 0xffffff;
}

VerbsLink::~VerbsLink() { release(); }

void VerbsLink::release() {
  // Straight from RTS to destroy: macOS must not see a QP moved to ERR.
  if (qp_) api_.destroy_qp(qp_);
  if (cq_) api_.destroy_cq(cq_);
  if (channel_) api_.destroy_comp_channel(channel_);
  if (mr_) api_.dereg_mr(mr_);
  if (pd_) api_.dealloc_pd(pd_);
  if (context_) api_.close_device(context_);
  std::free(frames_);
  qp_ = nullptr, cq_ = nullptr, channel_ = nullptr, mr_ = nullptr, pd_ = nullptr, context_ = nullptr, frames_ = nullptr;
}

void VerbsLink::fail(const std::string& what) const {
  throw LinkError(fmt::format("{} ({}): {}", pair_, device_, what));
}

void VerbsLink::create_queue_pair() {
  const std::size_t bytes = 2 * std::size_t{options_.queue_depth} * options_.frame_bytes;
  frames_ = static_cast<std::byte*>(std::aligned_alloc(kPageBytes, bytes));
  if (!frames_) fail("cannot allocate the frame rings");
  std::memset(frames_, 0, bytes);
  if (!(pd_ = api_.alloc_pd(context_))) fail("ibv_alloc_pd failed");
  if (!(mr_ = api_.reg_mr(pd_, frames_, bytes, kMrAccess)))
    fail(fmt::format("ibv_reg_mr of {} bytes failed: {}", bytes, std::strerror(errno)));
  // Idle waits sleep on the channel; non-blocking, so draining it never blocks.
  if ((channel_ = api_.create_comp_channel(context_)) && fcntl(channel_->fd, F_SETFL, O_NONBLOCK) != 0)
    fail("cannot make the completion channel non-blocking");
  if (!(cq_ = api_.create_cq(context_, static_cast<int>(2 * options_.queue_depth), channel_)))
    fail("ibv_create_cq failed");
  ibv_qp_init_attr init{};
  init.send_cq = cq_;
  init.recv_cq = cq_;
  init.qp_type = options_.qp_type == QpType::kUC ? IBV_QPT_UC : IBV_QPT_RC;
  init.sq_sig_all = 1;  // every completion is checked
  init.cap.max_send_wr = options_.queue_depth;
  init.cap.max_recv_wr = options_.queue_depth;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  sges_.resize(options_.queue_depth);
  send_wrs_.resize(options_.queue_depth);
  recv_wrs_.resize(options_.queue_depth);
  if (!(qp_ = api_.create_qp(pd_, &init))) fail(fmt::format("ibv_create_qp failed: {}", std::strerror(errno)));
  local_.qpn = qp_->qp_num;
}

void VerbsLink::connect(const VerbsEndpoint& remote) {
  to_init();
  to_rtr(remote);
  to_rts();
  // ibv_post_recv is refused before RTS on macOS.
  std::vector<std::uint32_t> slots(options_.queue_depth);
  for (std::uint32_t slot = 0; slot < options_.queue_depth; ++slot) slots[slot] = slot;
  post_receives(slots);
}

void VerbsLink::to_init() {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = port_;
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  if (api_.modify_qp(qp_, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
    fail("cannot move the queue pair to INIT");
}

void VerbsLink::to_rtr(const VerbsEndpoint& remote) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = std::min(mtu_, static_cast<ibv_mtu>(remote.mtu));  // UC drops what the other end's MTU does not fit
  attr.dest_qp_num = remote.qpn;
  attr.rq_psn = remote.psn;
  attr.ah_attr.dlid = remote.lid;
  attr.ah_attr.port_num = port_;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.grh.hop_limit = 1;
  attr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(gid_index_);
  std::copy(remote.gid.begin(), remote.gid.end(), attr.ah_attr.grh.dgid.raw);
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  if (options_.qp_type == QpType::kRC) {
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 12;
    mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  }
  if (api_.modify_qp(qp_, &attr, mask) != 0)
    fail(fmt::format("cannot move the queue pair to RTR towards qpn {} gid {}", remote.qpn, gid_to_string(remote.gid)));
}

void VerbsLink::to_rts() {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = local_.psn;
  int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (options_.qp_type == QpType::kRC) {
    attr.timeout = 14;  // 4.096 us * 2^14 = 67 ms per try
    attr.retry_cnt = 7;
    attr.rnr_retry = 6;  // finite (7 retries forever): a dead peer must surface
    attr.max_rd_atomic = 1;
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  }
  if (api_.modify_qp(qp_, &attr, mask) != 0) fail("cannot move the queue pair to RTS");
}

void VerbsLink::post_receives(std::span<const std::uint32_t> slots) {
  if (slots.empty()) return;
  std::vector<ibv_sge>& sges = sges_;
  std::vector<ibv_recv_wr>& wrs = recv_wrs_;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    sges[i] = {}, wrs[i] = {};
    sges[i].addr = reinterpret_cast<std::uintptr_t>(frames_ + (options_.queue_depth + slots[i]) * options_.frame_bytes);
    sges[i].length = static_cast<std::uint32_t>(options_.frame_bytes);
    sges[i].lkey = mr_->lkey;
    wrs[i].wr_id = slots[i];
    wrs[i].sg_list = &sges[i];
    wrs[i].num_sge = 1;
    wrs[i].next = i + 1 < slots.size() ? &wrs[i + 1] : nullptr;
  }
  ibv_recv_wr* bad = nullptr;
  if (api_.post_recv(qp_, wrs.data(), &bad) != 0)
    fail(fmt::format("ibv_post_recv of frame {} failed", bad ? bad->wr_id : slots[0]));
}

std::span<std::byte> VerbsLink::next_send_frame() {
  if (posted_sends_ + filled_sends_ - completed_sends_ >= options_.queue_depth) return {};
  const std::size_t slot = (posted_sends_ + filled_sends_) % options_.queue_depth;
  return {frames_ + slot * options_.frame_bytes, options_.frame_bytes};
}

void VerbsLink::post_sends() {
  if (filled_sends_ == 0) return;
  std::vector<ibv_sge>& sges = sges_;
  std::vector<ibv_send_wr>& wrs = send_wrs_;
  for (std::uint32_t i = 0; i < filled_sends_; ++i) {
    const auto slot = static_cast<std::uint32_t>((posted_sends_ + i) % options_.queue_depth);
    sges[i] = {}, wrs[i] = {};
    sges[i].addr = reinterpret_cast<std::uintptr_t>(frames_ + slot * options_.frame_bytes);
    sges[i].length = static_cast<std::uint32_t>(options_.frame_bytes);
    sges[i].lkey = mr_->lkey;
    wrs[i].wr_id = kSendBit | slot;
    wrs[i].sg_list = &sges[i];
    wrs[i].num_sge = 1;
    wrs[i].opcode = IBV_WR_SEND;
    wrs[i].next = i + 1 < filled_sends_ ? &wrs[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  const int err = api_.post_send(qp_, wrs.data(), &bad);
  // The ones before `bad` went out; a refusal fails the link anyway.
  const std::uint32_t posted = err == 0 || !bad ? filled_sends_ : static_cast<std::uint32_t>(bad - wrs.data());
  posted_sends_ += posted;
  filled_sends_ = 0;
  if (err != 0) fail(fmt::format("ibv_post_send of frame {} failed", posted_sends_ % options_.queue_depth));
}

int VerbsLink::poll(const std::function<void(std::span<const std::byte>)>& on_frame) {
  ibv_wc wc[32];
  const int n = api_.poll_cq(cq_, 32, wc);
  if (n < 0) fail("ibv_poll_cq failed");
  std::uint32_t received[32];
  int reposts = 0;
  for (int i = 0; i < n; ++i) {
    const bool is_send = (wc[i].wr_id & kSendBit) != 0;
    if (wc[i].status != IBV_WC_SUCCESS)
      fail(fmt::format("{} completion failed: {}", is_send ? "send" : "receive", ibv_wc_status_str(wc[i].status)));
    if (is_send) {
      ++completed_sends_;  // a QP completes its sends in order
      continue;
    }
    const auto slot = static_cast<std::uint32_t>(wc[i].wr_id);
    if (wc[i].byte_len != options_.frame_bytes)
      fail(fmt::format("received {} bytes where every frame is {}", wc[i].byte_len, options_.frame_bytes));
    on_frame({frames_ + (options_.queue_depth + slot) * options_.frame_bytes, options_.frame_bytes});
    received[reposts++] = slot;
  }
  post_receives({received, static_cast<std::size_t>(reposts)});
  return n;
}

int VerbsLink::arm() {
  if (!channel_) return -1;
  if (api_.req_notify_cq(cq_) != 0) fail("ibv_req_notify_cq failed");
  return channel_->fd;
}

void VerbsLink::drain_events() {
  ibv_cq* cq = nullptr;
  while (channel_ && api_.get_cq_event(channel_, &cq) == 0) api_.ack_cq_events(cq, 1);
}

std::string VerbsLink::async_failure() {
  std::string why;
  ibv_async_event event{};
  while (why.empty() && api_.next_async_event(context_, &event) == 0) {
    const auto type = event.event_type;
    if (type == IBV_EVENT_PORT_ERR && event.element.port_num == port_)
      why = fmt::format("port {} went DOWN (IBV_EVENT_PORT_ERR)", port_);
    else if (type == IBV_EVENT_DEVICE_FATAL)
      why = "the RDMA device failed (IBV_EVENT_DEVICE_FATAL)";
    else if ((type == IBV_EVENT_QP_FATAL || type == IBV_EVENT_QP_REQ_ERR || type == IBV_EVENT_QP_ACCESS_ERR) &&
             event.element.qp == qp_)
      why = fmt::format("the queue pair failed ({})", ibv_event_type_str(type));
    api_.ack_async_event(&event);
  }
  return why.empty() ? why : fmt::format("{} ({}): {}", pair_, device_, why);
}

}  // namespace hw
