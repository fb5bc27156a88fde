#include "sim/fault_injector.hpp"

#include <fmt/format.h>

#include <simgrid/s4u.hpp>
#include <tuple>

#include "engine/base/error.hpp"

namespace sg4 = simgrid::s4u;

namespace sim {

namespace {

// Both directions of a cable (or of a node's NIC on a switched network).
std::vector<sg4::Link*> directions(const std::string& name) {
  auto* link = sg4::SplitDuplexLink::by_name(name);
  return {link->get_link_up(), link->get_link_down()};
}

// A machine's hosts: its primary one and, with a secondary network, its second NIC's.
std::vector<sg4::Host*> machine(const PlatformSpec& p, int node) {
  std::vector<sg4::Host*> hosts{sg4::Host::by_name(p.hosts[node])};
  if (p.secondary) hosts.push_back(sg4::Host::by_name(secondary_host(p.hosts[node])));
  return hosts;
}

void set_links(const std::vector<sg4::Link*>& links, bool on) {
  for (auto* l : links) on ? l->turn_on() : l->turn_off();
}

}  // namespace

void FaultInjector::start() {
  std::vector<double> boot_s;
  for (const auto& n : s_.nodes) boot_s.push_back(catalog_.hardware(n.hardware).boot_s);
  const auto faults = engine::fault_actions(s_, boot_s);
  for (std::size_t i = 0; i < faults.size(); ++i) {
    sg4::Actor::create("fault-" + engine::to_string(s_.faults[i].kind), sg4::Host::by_name(Simulation::kControlHost),
                       [this, actions = faults[i]] {
                         for (const engine::FaultAction& a : actions) {
                           sg4::this_actor::sleep_until(a.at_s);
                           apply(a);
                         }
                       });
  }
}

void FaultInjector::hold_cable(int a, int b, engine::CableHolds::Change change) {
  const std::string name = cable_link_name(sim_.platform(), a, b);
  const bool rdma = !sim_.platform().wire_between(a, b)->card.switched;
  set_links(directions(name), holds_.change(name, change, rdma));
}

void FaultInjector::degrade(const engine::FaultAction& a) {
  const auto links = directions(cable_link_name(sim_.platform(), a.node, a.peer));
  double bw, lat;
  if (const auto was = undegraded_.extract(a.fault)) {
    std::tie(bw, lat) = was.mapped();
  } else {
    undegraded_[a.fault] = {links[0]->get_bandwidth(), links[0]->get_latency()};
    bw = links[0]->get_bandwidth() * a.factor;
    lat = links[0]->get_latency() + a.added_latency_s;
  }
  for (auto* l : links) l->set_bandwidth(bw)->set_latency(lat);
}

void FaultInjector::update_speed(int node) { sim_.speed()[node] = hangs_[node] > 0 ? 0.0 : throttle_[node]; }

void FaultInjector::apply(const engine::FaultAction& a) {
  using Op = engine::FaultAction::Op;
  bool noted = true;
  switch (a.op) {
    case Op::kNote:
      break;
    case Op::kCable:
      hold_cable(a.node, a.peer, a.change);
      break;
    case Op::kDegrade:
      degrade(a);
      break;
    case Op::kPowerOff:
    case Op::kBoot:
      for (auto* h : machine(sim_.platform(), a.node)) a.op == Op::kBoot ? h->turn_on() : h->turn_off();
      break;
    case Op::kHang:
      ++hangs_[a.node];
      update_speed(a.node);
      break;
    case Op::kResume:
      --hangs_[a.node];
      update_speed(a.node);
      noted = hangs_[a.node] == 0;  // it answers again when its last hang ends
      break;
    case Op::kThrottle:
      throttle_[a.node] = a.factor;
      update_speed(a.node);
      break;
    case Op::kRdmaStackFailure:
      // IP that goes on keeps the cables: the engines' queue pairs fail instead (SimRuntime).
      if (a.ip_survives) {
        sim_.rdma_failed() = true;
        break;
      }
      holds_.fail_rdma_stack();
      for (const Wire& w : sim_.platform().wires)
        if (!w.card.switched) set_links(directions(cable_link_name(sim_.platform(), w.a, w.b)), false);
      break;
  }
  if (noted && !a.event.kind.empty()) {
    engine::RunEvent e = a.event;
    e.t_s = sg4::Engine::get_clock();
    log_.push_back(std::move(e));
  }
}

std::string cable_link_name(const PlatformSpec& p, int a, int b) {
  for (const Wire& w : p.wires)
    if ((w.a == a && w.b == b) || (w.a == b && w.b == a))
      return w.card.switched ? "nic-" + p.hosts[a] : "cable-" + p.hosts[w.a] + "-" + p.hosts[w.b];
  throw std::out_of_range("no cable between " + p.hosts.at(a) + " and " + p.hosts.at(b));
}

bool simulated(engine::FaultKind k) { return k != engine::FaultKind::kRdmaPacketLoss; }

void refuse_unsimulated(const engine::Scenario& s) {
  for (std::size_t i = 0; i < s.faults.size(); ++i)
    if (!simulated(s.faults[i].kind))
      // What the transport would see is not a rate but one event at a random
      // time: it resends nothing (UC) and takes the first frame lost or out of
      // order for its peer's failure (hw/verbs/verbs_frames.hpp).
      throw engine::InputError(
          s.file, fmt::format("/faults/{}/kind", i),
          engine::to_string(s.faults[i].kind) +
              " is not simulated: the rdma transport resends nothing and fails the peer at the first frame lost "
              "or out of order, at a time set by which packet is dropped. Run it on real processes over softrdma "
              "(launch --local N --rdma-device rdma_lo, launch --netns --netns-rdma), or simulate the cable's "
              "failure with link-down");
}

}  // namespace sim
