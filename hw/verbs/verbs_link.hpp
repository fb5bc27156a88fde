// One queue pair to one peer on one device: context, PD, CQ, QP and a
// registered ring of send and receive frames, following rdma-core's
// rc_pingpong and Apple's rules (docs/reference-facts.md#macos-rdma-over-thunderbolt):
// the active port is searched,
// the IPv4-mapped GID is used, receives are posted only once in RTS, and the
// QP is destroyed without being moved to ERR.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/verbs/verbs_api.hpp"
#include "hw/verbs/verbs_endpoint.hpp"
#include "hw/verbs/verbs_options.hpp"

namespace hw {

// The link failed: a verbs call was refused or a completion came back bad.
// The message names the pair ("rank 0 -> rank 1 (rdma_en3)").
class LinkError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class VerbsLink {
 public:
  // Opens `device`, finds its active port and IPv4-mapped GID, creates the
  // PD, CQ and QP (left in RESET) and registers the frames. `pair` names the
  // link in errors. Throws LinkError when the device is missing, down or has
  // no IPv4-mapped GID yet.
  VerbsLink(VerbsApi& api, const std::string& device, const std::string& pair, const VerbsOptions& options,
            std::uint32_t psn);
  // Destroys QP, CQ, MR, PD and context in that order.
  ~VerbsLink();
  VerbsLink(const VerbsLink&) = delete;
  VerbsLink& operator=(const VerbsLink&) = delete;

  VerbsEndpoint local() const { return local_; }
  // INIT -> RTR -> RTS towards `remote`, then posts every receive frame.
  void connect(const VerbsEndpoint& remote);

  // A free send frame to fill, or an empty span when all are filled or in flight.
  std::span<std::byte> next_send_frame();
  // The frame next_send_frame() returned is filled: post_sends() sends it.
  void fill_next_send() { ++filled_sends_; }
  // Posts every filled frame, in order, with one call.
  void post_sends();
  bool sends_in_flight() const { return posted_sends_ != completed_sends_; }

  // Reaps completions: finished sends free their frames; each received frame
  // goes to `on_frame`; then the receive frames are posted again, with one
  // call. Returns how many completions there were.
  int poll(const std::function<void(std::span<const std::byte>)>& on_frame);

  // Asks for an event on the next completion and returns the fd that becomes
  // readable then, or -1 when the device has no completion channel. Poll once
  // more after arming: a completion that came before it raises no event.
  int arm();
  // Consumes the events of a readable channel fd.
  void drain_events();
  // Why the link can carry nothing any more, from the device's asynchronous
  // events: its port went DOWN (a cable pulled, an interface set down), the
  // device or the queue pair failed. "" while no such event came.
  std::string async_failure();

 private:
  void create_queue_pair();
  void to_init();
  void to_rtr(const VerbsEndpoint& remote);
  void to_rts();
  // Posts the receive frames in `slots`, with one call.
  void post_receives(std::span<const std::uint32_t> slots);
  void release();
  [[noreturn]] void fail(const std::string& what) const;

  VerbsApi& api_;
  std::string device_, pair_;
  VerbsOptions options_;
  std::uint8_t port_ = 0;
  int gid_index_ = -1;
  ibv_mtu mtu_ = IBV_MTU_1024;
  VerbsEndpoint local_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_mr* mr_ = nullptr;
  std::byte* frames_ = nullptr;  // queue_depth send frames, then queue_depth receive frames
  std::uint64_t posted_sends_ = 0, completed_sends_ = 0;
  std::uint32_t filled_sends_ = 0;  // after the posted ones
  // What post_sends and post_receives hand the device, kept to spare an allocation a call.
  std::vector<ibv_sge> sges_;
  std::vector<ibv_send_wr> send_wrs_;
  std::vector<ibv_recv_wr> recv_wrs_;
};

}  // namespace hw
