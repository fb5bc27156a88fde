// The order of the verbs calls that set up, connect and tear down a queue
// pair, seen through a recorder behind VerbsApi. The recorder never delivers
// a frame: it answers setup calls like a device with port 1 down and port 2
// up, and reports only the completions a test puts in it (failures, mostly).
#include "hw/verbs/verbs_link.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>

#include "engine/base/error.hpp"
#include "hw/verbs/verbs_api.hpp"
#include "hw/verbs/verbs_runtime.hpp"
#include "support/tcp_cluster.hpp"

namespace {

const char* state_name(int s) {
  switch (s) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_ERR:
      return "ERR";
    default:
      return "OTHER";
  }
}

class Recorder : public hw::VerbsApi {
 public:
  std::vector<std::string> calls;
  std::map<std::string, ibv_qp_attr> attrs;  // by target state name
  std::map<std::string, int> masks;
  ibv_qp_init_attr qp_init{};
  int mr_access = 0;
  std::vector<std::string> devices{"rdma_en2", "rdma_en3"};
  ibv_port_state port2_state = IBV_PORT_ACTIVE;
  bool has_ipv4_gid = true;
  bool typed_gids = true;  // the library has ibv_query_gid_ex
  std::uint32_t ipv4_v1_index = 1, ipv4_v2_index = 2;
  int gid_table_len = 3;
  std::deque<ibv_wc> completions;  // what poll_cq hands out
  std::deque<ibv_async_event> async_events;
  std::vector<std::uint64_t> posted_recv_ids;

  std::vector<std::string> device_names() override { return devices; }
  ibv_context* open_device(const std::string& name) override {
    calls.push_back("open_device " + name);
    return std::count(devices.begin(), devices.end(), name) ? &context_ : nullptr;
  }
  int close_device(ibv_context*) override { return log("close_device"); }
  int query_device(ibv_context*, ibv_device_attr* a) override {
    a->phys_port_cnt = 2;
    return log("query_device");
  }
  int query_port(ibv_context*, std::uint8_t port, ibv_port_attr* a) override {
    a->state = port == 2 ? port2_state : IBV_PORT_DOWN;
    a->active_mtu = IBV_MTU_4096;
    a->lid = 0;
    a->gid_tbl_len = gid_table_len;
    return log(fmt::format("query_port {}", port));
  }
  // As rxe lists them: link-local, then the IPv4-mapped GID as RoCE v1 and as RoCE v2.
  ibv_gid gid_at(std::uint32_t index) const {
    ibv_gid g{};
    if (index == 0) g.raw[0] = 0xfe, g.raw[1] = 0x80, g.raw[15] = 1;
    if ((index == ipv4_v1_index || index == ipv4_v2_index) && has_ipv4_gid)
      g.raw[10] = g.raw[11] = 0xff, g.raw[12] = 10, g.raw[15] = 2;
    return g;
  }
  int query_gid(ibv_context*, std::uint8_t port, int index, ibv_gid* g) override {
    *g = gid_at(static_cast<std::uint32_t>(index));
    return log(fmt::format("query_gid {} {}", port, index));
  }
  int query_gid_ex(ibv_context*, std::uint8_t port, std::uint32_t index, ibv_gid* g, bool* roce_v2) override {
    log(fmt::format("query_gid_ex {} {}", port, index));
    if (!typed_gids) return EOPNOTSUPP;
    *g = gid_at(index);
    *roce_v2 = index != ipv4_v1_index;
    return 0;
  }
  int next_async_event(ibv_context*, ibv_async_event* event) override {
    if (async_events.empty()) return -1;
    *event = async_events.front();
    async_events.pop_front();
    return 0;
  }
  void ack_async_event(ibv_async_event*) override { log("ack_async_event"); }
  ibv_pd* alloc_pd(ibv_context*) override { return log("alloc_pd"), &pd_; }
  int dealloc_pd(ibv_pd*) override { return log("dealloc_pd"); }
  // No completion channel: the link polls, as it must on a device without one.
  ibv_comp_channel* create_comp_channel(ibv_context*) override { return log("create_comp_channel"), nullptr; }
  int destroy_comp_channel(ibv_comp_channel*) override { return log("destroy_comp_channel"); }
  ibv_cq* create_cq(ibv_context*, int entries, ibv_comp_channel*) override {
    return log(fmt::format("create_cq {}", entries)), &cq_;
  }
  int destroy_cq(ibv_cq*) override { return log("destroy_cq"); }
  int req_notify_cq(ibv_cq*) override { return log("req_notify_cq"); }
  int get_cq_event(ibv_comp_channel*, ibv_cq**) override { return -1; }
  void ack_cq_events(ibv_cq*, unsigned int) override {}
  ibv_qp* create_qp(ibv_pd*, ibv_qp_init_attr* a) override {
    qp_init = *a;
    qp_.qp_num = 0x4242;
    return log(a->qp_type == IBV_QPT_UC ? "create_qp UC" : "create_qp RC"), &qp_;
  }
  int modify_qp(ibv_qp*, ibv_qp_attr* a, int mask) override {
    const std::string s = state_name(a->qp_state);
    attrs[s] = *a;
    masks[s] = mask;
    return log("modify_qp " + s);
  }
  int destroy_qp(ibv_qp*) override { return log("destroy_qp"); }
  ibv_mr* reg_mr(ibv_pd*, void*, std::size_t, int access) override {
    mr_access = access;
    mr_.lkey = 7;
    return log("reg_mr"), &mr_;
  }
  int dereg_mr(ibv_mr*) override { return log("dereg_mr"); }
  // A chain of work requests is logged one by one, as the device takes them.
  int post_send(ibv_qp*, ibv_send_wr* wr, ibv_send_wr**) override {
    for (; wr; wr = wr->next) log(fmt::format("post_send {}", wr->sg_list->length));
    return 0;
  }
  int post_recv(ibv_qp*, ibv_recv_wr* wr, ibv_recv_wr**) override {
    for (; wr; wr = wr->next) {
      posted_recv_ids.push_back(wr->wr_id);
      log("post_recv");
    }
    return 0;
  }
  int poll_cq(ibv_cq*, int entries, ibv_wc* wc) override {
    int n = 0;
    for (; n < entries && !completions.empty(); ++n) {
      wc[n] = completions.front();
      completions.pop_front();
    }
    return n;
  }

  // The calls from the first one starting with `prefix`.
  std::vector<std::string> from(const std::string& prefix) const {
    auto it = std::find_if(calls.begin(), calls.end(), [&](const std::string& c) { return c.starts_with(prefix); });
    return {it, calls.end()};
  }

 private:
  int log(const std::string& call) {
    calls.push_back(call);
    return 0;
  }
  ibv_context context_{};
  ibv_pd pd_{};
  ibv_cq cq_{};
  ibv_qp qp_{};
  ibv_mr mr_{};
};

hw::VerbsOptions options(hw::QpType type = hw::QpType::kUC) {
  hw::VerbsOptions o;
  o.frame_bytes = 4096;
  o.queue_depth = 4;
  o.qp_type = type;
  return o;
}

hw::VerbsEndpoint remote() {
  hw::VerbsEndpoint e;
  e.qpn = 0x99;
  e.psn = 0x777;
  e.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 3};
  e.mtu = IBV_MTU_4096;
  return e;
}

std::string link_error(Recorder& api, const std::string& device) {
  try {
    hw::VerbsLink link(api, device, "rank 0 -> rank 1", options(), 1);
  } catch (const hw::LinkError& e) {
    return e.what();
  }
  return "no error";
}

TEST(VerbsLink, SetsUpConnectsAndTearsDownInTheVerbsOrder) {
  Recorder api;
  {
    hw::VerbsLink link(api, "rdma_en3", "rank 0 -> rank 1", options(), 0x1234);
    EXPECT_EQ(link.local().qpn, 0x4242u);
    EXPECT_EQ(hw::gid_to_string(link.local().gid), "::ffff:10.0.0.2");
    link.connect(remote());
  }
  const std::vector<std::string> expected{"open_device rdma_en3",
                                          "query_device",
                                          "query_port 1",
                                          "query_port 2",  // port 1 is down: not assumed
                                          "query_gid_ex 2 0",
                                          "query_gid_ex 2 1",
                                          "query_gid_ex 2 2",
                                          "alloc_pd",
                                          "reg_mr",
                                          "create_comp_channel",
                                          "create_cq 8",
                                          "create_qp UC",
                                          "modify_qp INIT",
                                          "modify_qp RTR",
                                          "modify_qp RTS",
                                          "post_recv",
                                          "post_recv",
                                          "post_recv",
                                          "post_recv",  // only once in RTS
                                          "destroy_qp",
                                          "destroy_cq",
                                          "dereg_mr",
                                          "dealloc_pd",
                                          "close_device"};  // no ERR first
  EXPECT_EQ(api.calls, expected);
}

TEST(VerbsLink, UsesTheActivePortTheIpv4GidAndThePeersEndpoint) {
  Recorder api;
  hw::VerbsLink link(api, "rdma_en3", "rank 0 -> rank 1", options(), 0x1234);
  link.connect(remote());
  EXPECT_EQ(api.attrs["INIT"].port_num, 2);
  EXPECT_EQ(api.attrs["RTR"].ah_attr.port_num, 2);
  EXPECT_EQ(api.attrs["RTR"].ah_attr.grh.sgid_index, 2);
  EXPECT_EQ(api.attrs["RTR"].ah_attr.is_global, 1);
  EXPECT_EQ(api.attrs["RTR"].ah_attr.grh.dgid.raw[15], 3);
  EXPECT_EQ(api.attrs["RTR"].dest_qp_num, 0x99u);
  EXPECT_EQ(api.attrs["RTR"].rq_psn, 0x777u);
  EXPECT_EQ(api.attrs["RTR"].path_mtu, IBV_MTU_4096);
  EXPECT_EQ(api.attrs["RTS"].sq_psn, 0x1234u);
  // Apple refuses memory registered with LOCAL_WRITE alone.
  EXPECT_NE(api.mr_access, IBV_ACCESS_LOCAL_WRITE);
  EXPECT_TRUE(api.mr_access & IBV_ACCESS_LOCAL_WRITE);
  EXPECT_FALSE(api.mr_access & IBV_ACCESS_REMOTE_WRITE);  // SEND/RECV needs no peer writing here
  EXPECT_EQ(api.qp_init.cap.max_recv_wr, 4u);             // queue depth counts frames
  EXPECT_EQ(api.qp_init.sq_sig_all, 1);                   // every send completion is checked
}

TEST(VerbsLink, TakesTheRoceV2GidOverItsRoceV1Twin) {
  Recorder api;  // ::ffff:10.0.0.2 at 1 as RoCE v1, at 2 as RoCE v2
  hw::VerbsLink(api, "rdma_en3", "r", options(), 1).connect(remote());
  EXPECT_EQ(api.attrs["RTR"].ah_attr.grh.sgid_index, 2);
}

TEST(VerbsLink, TakesTheFirstIpv4GidWhereTheLibraryHasNoGidTypes) {
  Recorder api;
  api.typed_gids = false;
  hw::VerbsLink(api, "rdma_en3", "r", options(), 1).connect(remote());
  EXPECT_EQ(api.attrs["RTR"].ah_attr.grh.sgid_index, 1);
  EXPECT_NE(std::find(api.calls.begin(), api.calls.end(), "query_gid 2 1"), api.calls.end());
}

TEST(VerbsLink, AGidIndexBeyondEightBitsIsRefusedNotCut) {
  Recorder api;
  api.gid_table_len = 300;
  api.ipv4_v1_index = api.ipv4_v2_index = 258;  // 258 would become 2 in sgid_index's 8 bits
  const std::string e = link_error(api, "rdma_en3");
  EXPECT_NE(e.find("at index 258, beyond the 8 bits of sgid_index"), std::string::npos) << e;
  EXPECT_EQ(api.calls.back(), "close_device");
}

TEST(VerbsLink, ConnectsAtTheSmallerOfTheTwoPortsMtus) {
  Recorder api;  // our port: 4096
  hw::VerbsLink link(api, "rdma_en3", "r", options(), 1);
  EXPECT_EQ(link.local().mtu, IBV_MTU_4096);
  hw::VerbsEndpoint peer = remote();
  peer.mtu = IBV_MTU_1024;
  link.connect(peer);
  EXPECT_EQ(api.attrs["RTR"].path_mtu, IBV_MTU_1024);
}

TEST(VerbsLink, UcCarriesNoReliableConnectionAttributes) {
  Recorder api;
  hw::VerbsLink(api, "rdma_en3", "r", options(hw::QpType::kUC), 1).connect(remote());
  EXPECT_EQ(api.masks["RTR"], IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
  EXPECT_EQ(api.masks["RTS"], IBV_QP_STATE | IBV_QP_SQ_PSN);
}

TEST(VerbsLink, RcAddsRetriesThatEnd) {
  Recorder api;
  hw::VerbsLink(api, "rdma_en3", "r", options(hw::QpType::kRC), 1).connect(remote());
  EXPECT_NE(std::find(api.calls.begin(), api.calls.end(), "create_qp RC"), api.calls.end());
  EXPECT_TRUE(api.masks["RTR"] & IBV_QP_MIN_RNR_TIMER);
  EXPECT_TRUE(api.masks["RTS"] & IBV_QP_RETRY_CNT);
  EXPECT_LT(api.attrs["RTS"].rnr_retry, 7);  // 7 would retry forever
}

TEST(VerbsLink, MissingDeviceNamesThePairAndListsTheDevices) {
  Recorder api;
  const std::string e = link_error(api, "rdma_en9");
  EXPECT_NE(e.find("rank 0 -> rank 1 (rdma_en9)"), std::string::npos) << e;
  EXPECT_NE(e.find("rdma_en2, rdma_en3"), std::string::npos) << e;
}

TEST(VerbsLink, DownDeviceIsRefusedAndReleased) {
  Recorder api;
  api.port2_state = IBV_PORT_DOWN;
  const std::string e = link_error(api, "rdma_en3");
  EXPECT_NE(e.find("rank 0 -> rank 1 (rdma_en3): device is down"), std::string::npos) << e;
  EXPECT_NE(e.find("port 2 DOWN"), std::string::npos) << e;
  EXPECT_EQ(api.calls.back(), "close_device");
}

TEST(VerbsLink, NoIpv4GidYetIsRefusedAndReleased) {
  Recorder api;
  api.has_ipv4_gid = false;
  const std::string e = link_error(api, "rdma_en3");
  EXPECT_NE(e.find("no IPv4-mapped GID"), std::string::npos) << e;
  EXPECT_EQ(api.calls.back(), "close_device");
}

TEST(VerbsLink, AReceivedFrameIsHandedOverAndItsSlotPostedAgain) {
  Recorder api;
  hw::VerbsLink link(api, "rdma_en3", "r", options(), 1);
  link.connect(remote());
  ibv_wc wc{};
  wc.wr_id = 2;
  wc.status = IBV_WC_SUCCESS;
  wc.byte_len = 4096;
  api.completions.push_back(wc);
  int frames = 0;
  EXPECT_EQ(link.poll([&](std::span<const std::byte> f) { frames += f.size() == 4096; }), 1);
  EXPECT_EQ(frames, 1);
  EXPECT_EQ(api.posted_recv_ids.back(), 2u);
}

TEST(VerbsLink, SendFramesAreBoundedByTheQueueDepth) {
  Recorder api;
  hw::VerbsLink link(api, "rdma_en3", "r", options(), 1);
  link.connect(remote());
  for (int i = 0; i < 4; ++i) {
    ASSERT_FALSE(link.next_send_frame().empty());
    link.fill_next_send();
  }
  EXPECT_TRUE(link.next_send_frame().empty());  // filled frames take their slots before they are posted
  link.post_sends();
  EXPECT_TRUE(link.next_send_frame().empty());
  EXPECT_EQ(std::count(api.calls.begin(), api.calls.end(), "post_send 4096"), 4);  // always the full stride
}

TEST(VerbsLink, ItsPortGoingDownIsAFailureOtherPortsAreNot) {
  Recorder api;
  hw::VerbsLink link(api, "rdma_en3", "rank 0 -> rank 1", options(), 1);
  link.connect(remote());
  ibv_async_event other{}, ours{};
  other.event_type = ours.event_type = IBV_EVENT_PORT_ERR;
  other.element.port_num = 1;  // the link is on port 2
  ours.element.port_num = 2;
  api.async_events = {other};
  EXPECT_EQ(link.async_failure(), "");
  api.async_events = {other, ours};
  EXPECT_EQ(link.async_failure(), "rank 0 -> rank 1 (rdma_en3): port 2 went DOWN (IBV_EVENT_PORT_ERR)");
  EXPECT_EQ(std::count(api.calls.begin(), api.calls.end(), "ack_async_event"), 3);  // every event acknowledged
}

TEST(VerbsLink, AFailedCompletionIsAnError) {
  Recorder api;
  hw::VerbsLink link(api, "rdma_en3", "rank 0 -> rank 1", options(), 1);
  link.connect(remote());
  ibv_wc wc{};
  wc.wr_id = 1ull << 63;
  wc.status = IBV_WC_RETRY_EXC_ERR;
  api.completions.push_back(wc);
  try {
    link.poll([](std::span<const std::byte>) {});
    FAIL() << "a failed completion went unnoticed";
  } catch (const hw::LinkError& e) {
    EXPECT_NE(std::string(e.what()).find("send completion failed"), std::string::npos) << e.what();
  }
}

TEST(VerbsLink, AShortFrameIsAnError) {
  Recorder api;
  hw::VerbsLink link(api, "rdma_en3", "r", options(), 1);
  link.connect(remote());
  ibv_wc wc{};
  wc.status = IBV_WC_SUCCESS;
  wc.byte_len = 100;
  api.completions.push_back(wc);
  EXPECT_THROW(link.poll([](std::span<const std::byte>) {}), hw::LinkError);
}

// `body(rt, api)` on each rank of two real processes: a VerbsRuntime whose
// side channel is real TCP and whose verbs calls go to a recorder.
std::vector<sim::ChildResult> over_recorders(const std::function<std::string(hw::VerbsRuntime&, Recorder&)>& body,
                                             double peer_timeout_s = options().peer_timeout_s) {
  return testsupport::run_tcp_cluster(
      2,
      [&](engine::Runtime& side) {
        Recorder api;
        hw::VerbsOptions o = options();
        o.devices = {std::nullopt, std::nullopt};
        o.devices[1 - side.rank()] = "rdma_en3";
        o.peer_timeout_s = peer_timeout_s;
        hw::VerbsRuntime rt(side.rank(), side.world(), o, side, api);
        return body(rt, api);
      },
      60);
}

std::ptrdiff_t sends_posted(const Recorder& api) {
  return std::count(api.calls.begin(), api.calls.end(), "post_send 4096");
}

// A failed completion must surface as PeerFailure naming the peer, the way a
// dead TCP connection does.
TEST(VerbsRuntime, AFailedCompletionIsAPeerFailureForThatRank) {
  const auto results = over_recorders([](hw::VerbsRuntime& rt, Recorder& api) {
    ibv_wc wc{};
    wc.status = IBV_WC_REM_ACCESS_ERR;
    api.completions.push_back(wc);
    try {
      rt.recv(1 - rt.rank(), 5, 5);
    } catch (const engine::PeerFailure& e) {
      return fmt::format("{} {}", e.peer(), e.what());
    }
    return std::string("no failure");
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(results[r].ok) << results[r].output;
    EXPECT_TRUE(results[r].output.starts_with(std::to_string(1 - r) + " ")) << results[r].output;
    EXPECT_NE(results[r].output.find("remote access error"), std::string::npos) << results[r].output;
  }
}

// A queue pair that fails at once: the first call meets the failure
// (PeerFailure, so the engine detects it); then the peer, whose process still
// runs, is reached over the side channel (TCP).
TEST(VerbsRuntime, AfterItsQueuePairFailedAPeerIsReachedOverTheSideChannel) {
  const auto results = over_recorders([](hw::VerbsRuntime& rt, Recorder& api) {
    ibv_wc wc{};
    wc.status = IBV_WC_WR_FLUSH_ERR;
    api.completions.push_back(wc);
    const int peer = 1 - rt.rank();
    std::string seen = "no failure";
    try {
      rt.recv(peer, 5, 5);
    } catch (const engine::PeerFailure& e) {
      seen = e.what();
    }
    const auto posted = sends_posted(api);
    rt.send(peer, 6, engine::Payload::of(std::vector<std::byte>(5000, std::byte(rt.rank()))));
    const bool crossed = rt.recv(peer, 6, 10).bytes == engine::Bytes(5000, std::byte(peer));
    return fmt::format("{} {} {}", crossed, sends_posted(api) - posted, seen);
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(results[r].ok) << results[r].output;
    EXPECT_TRUE(results[r].output.starts_with("true 0 ")) << results[r].output;  // crossed, nothing posted
    EXPECT_NE(results[r].output.find("Flushed"), std::string::npos) << results[r].output;
  }
}

// The engine's fallback (use_secondary_network): every message of every peer
// goes over the side channel, none to the device.
TEST(VerbsRuntime, TheSecondaryNetworkIsTheSideChannel) {
  const auto results = over_recorders([](hw::VerbsRuntime& rt, Recorder& api) {
    const bool moved = rt.use_secondary_network();
    const engine::Bytes message(100000, std::byte{9});
    rt.send(1 - rt.rank(), 7, engine::Payload::of(message));
    const bool crossed = rt.recv(1 - rt.rank(), 7, 10).bytes == message;
    return fmt::format("{} {} {}", moved, crossed, sends_posted(api));
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(results[r].ok) << results[r].output;
    EXPECT_EQ(results[r].output, "true true 0");
  }
}

// Without credits back from the peer, a sender stops one frame short of the
// peer's posted receives (the last is kept for returning credits), and a peer
// that stays silent past peer_timeout_s is a PeerFailure for that rank.
TEST(VerbsRuntime, SendsStopAtTheCreditsAndASilentPeerFails) {
  const auto results = over_recorders(
      [](hw::VerbsRuntime& rt, Recorder& api) {  // 4 receive frames per peer
        const int peer = 1 - rt.rank();
        rt.send(peer, 1, engine::Payload::sized(100000));  // 25 frames
        const auto sends = sends_posted(api);
        for (std::uint32_t slot = 0; slot < sends; ++slot) {  // the device reports them sent
          ibv_wc wc{};
          wc.wr_id = (1ull << 63) | slot;
          wc.status = IBV_WC_SUCCESS;
          api.completions.push_back(wc);
        }
        rt.sleep_for(0.5);
        const auto sends_later = sends_posted(api);
        try {
          rt.send(peer, 2, engine::Payload::sized(1));
        } catch (const engine::PeerFailure& e) {
          return fmt::format("{} {} {} {}", sends, sends_later, e.peer(), e.what());
        }
        return std::string("no failure");
      },
      0.2);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(results[r].ok) << results[r].output;
    EXPECT_TRUE(results[r].output.starts_with(fmt::format("3 3 {} ", 1 - r))) << results[r].output;
    EXPECT_NE(results[r].output.find("no credit returned"), std::string::npos) << results[r].output;
  }
}

}  // namespace
