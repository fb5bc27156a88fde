// rdma-check's pair mode: frames across the cable between two hosts rather
// than between two queue pairs of one device (whether Apple's stack loops a
// frame back through one Thunderbolt port is not known). Each process holds
// one end, a fresh UC queue pair per frame on its device; the two agree over
// `side`, a runtime of just the two (rank 0 is end a and sends, rank 1 is end
// b and receives), and both see the same Delivery. It owns `side` while it
// runs, as a link probe does, so its tags are small numbers.
#pragma once

#include <string>

#include "engine/base/runtime.hpp"
#include "hw/verbs/port_choice.hpp"
#include "hw/verbs/rdma_rules.hpp"
#include "hw/verbs/rule_kit.hpp"

namespace hw {

class CablePath : public FramePath {
 public:
  // Agrees with the other end on the smaller of the two active MTUs.
  // REQUIRES: side.world() == 2; the other end makes a CablePath too.
  CablePath(VerbsApi& api, const std::string& device, const PortChoice& port, engine::Runtime& side, double wait_s);

  ibv_mtu active_mtu() const override { return mtu_; }
  Delivery send(std::size_t bytes, ibv_mtu a_mtu, ibv_mtu b_mtu, ibv_wr_opcode op) override;
  // Why frames could not be observed: the other end went silent ("" while it answers).
  std::string unobservable() const override { return lost_; }

 private:
  // Sends `mine` to the other end under `tag` and returns what it sent under
  // it; empty once it is silent (lost_ says why).
  std::vector<std::byte> trade(int tag, std::vector<std::byte> mine);

  rule_kit::Side local_;
  PortChoice port_;
  engine::Runtime& side_;
  double wait_s_;
  ibv_mtu mtu_;
  std::string lost_;
};

}  // namespace hw
