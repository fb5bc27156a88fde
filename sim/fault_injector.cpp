#include "sim/fault_injector.hpp"

#include <fmt/format.h>

#include <simgrid/s4u.hpp>

#include "engine/base/error.hpp"
#include "engine/faults/tcp_instability.hpp"

namespace sg4 = simgrid::s4u;

namespace sim {

namespace {

// Both directions of a cable (or of a node's NIC on a switched network).
std::vector<sg4::Link*> directions(const std::string& name) {
  auto* link = sg4::SplitDuplexLink::by_name(name);
  return {link->get_link_up(), link->get_link_down()};
}

std::vector<sg4::Link*> cable(const PlatformSpec& p, const engine::FaultSpec& f) {
  return directions(cable_link_name(p, f.node, f.peer));
}

// Sleeps for the fault's duration; false when it lasts to the end of the run.
bool wait_out(const engine::FaultSpec& f) {
  if (f.duration_s <= 0) return false;
  sg4::this_actor::sleep_for(f.duration_s);
  return true;
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
  for (const auto& f : s_.faults) {
    sg4::Actor::create("fault-" + engine::to_string(f.kind), sg4::Host::by_name(Simulation::kControlHost), [this, f] {
      sg4::this_actor::sleep_until(f.at_s);
      apply(f);
    });
  }
}

void FaultInjector::hold_cable(const engine::FaultSpec& f, engine::CableHolds::Change change) {
  const std::string name = cable_link_name(sim_.platform(), f.node, f.peer);
  const bool rdma = !sim_.platform().wire_between(f.node, f.peer)->card.switched;
  set_links(directions(name), holds_.change(name, change, rdma));
}

void FaultInjector::update_speed(int node) { sim_.speed()[node] = hangs_[node] > 0 ? 0.0 : throttle_[node]; }

void FaultInjector::note(const std::string& kind, const std::string& target, const std::string& detail) {
  log_.push_back({sg4::Engine::get_clock(), kind, target, detail});
}

void FaultInjector::restart(int node, const std::string& cause) {
  const auto hosts = machine(sim_.platform(), node);
  for (auto* h : hosts) h->turn_off();
  note(engine::to_string(engine::FaultKind::kNodeCrash), s_.nodes[node].name, cause);
  sg4::this_actor::sleep_for(catalog_.hardware(s_.nodes[node].hardware).boot_s);
  for (auto* h : hosts) h->turn_on();
  note("node-up", s_.nodes[node].name, "booted; its engine process is not running until the cluster re-admits it");
}

void FaultInjector::apply(const engine::FaultSpec& f) {
  using engine::FaultKind;
  using Change = engine::CableHolds::Change;
  const std::string& target = f.target;
  const std::string kind = engine::to_string(f.kind);
  if (f.kind == FaultKind::kLinkDown || f.kind == FaultKind::kLinkUp) {
    const bool up = f.kind == FaultKind::kLinkUp;
    hold_cable(f, up ? Change::kReplug : Change::kHold);
    note(kind, target, up ? "cable back" : "cable unplugged");
    if (!up && wait_out(f)) {
      hold_cable(f, Change::kRelease);
      note(engine::to_string(FaultKind::kLinkUp), target, "cable back");
    }
  } else if (f.kind == FaultKind::kLinkDegrade) {
    const auto links = cable(sim_.platform(), f);
    const double bw = links[0]->get_bandwidth(), lat = links[0]->get_latency();
    for (auto* l : links) l->set_bandwidth(bw * f.factor)->set_latency(lat + f.added_latency_s);
    note(kind, target, fmt::format("bandwidth x{}, latency +{} s", f.factor, f.added_latency_s));
    if (wait_out(f)) {
      for (auto* l : links) l->set_bandwidth(bw)->set_latency(lat);
      note("link-restored", target, "full bandwidth and latency");
    }
  } else if (f.kind == FaultKind::kLinkFlap) {
    const double end = f.duration_s > 0 ? f.at_s + f.duration_s : s_.deadline_s;
    note(kind, target, fmt::format("down {:.0f}% of every {} s", 100 * f.duty, f.period_s));
    while (sg4::Engine::get_clock() + f.period_s <= end) {
      hold_cable(f, Change::kHold);
      sg4::this_actor::sleep_for(f.duty * f.period_s);
      hold_cable(f, Change::kRelease);
      sg4::this_actor::sleep_for((1 - f.duty) * f.period_s);
    }
  } else if (f.kind == FaultKind::kNodeCrash) {
    for (auto* h : machine(sim_.platform(), f.node)) h->turn_off();
    note(kind, target, "power lost");
  } else if (f.kind == FaultKind::kNodeRestart) {
    restart(f.node, "restarted");
  } else if (f.kind == FaultKind::kNodeHang) {
    ++hangs_[f.node];
    update_speed(f.node);
    note(kind, target, "alive but silent");
    if (wait_out(f)) {
      --hangs_[f.node];
      update_speed(f.node);
      if (hangs_[f.node] == 0) note("node-resumed", target, "answers again");
    }
  } else if (f.kind == FaultKind::kNodeSlow) {
    throttle_[f.node] = f.factor;
    update_speed(f.node);
    note(kind, target, fmt::format("compute at x{} speed (thermal throttling)", f.factor));
    if (wait_out(f)) {
      throttle_[f.node] = 1;
      update_speed(f.node);
      note("node-speed-restored", target, "full speed");
    }
  } else if (f.kind == FaultKind::kRdmaStackFailure) {
    // macOS 26.2: every RDMA link on every node is unusable until all nodes restart.
    holds_.fail_rdma_stack();
    for (const Wire& w : sim_.platform().wires)
      if (!w.card.switched) set_links(directions(cable_link_name(sim_.platform(), w.a, w.b)), false);
    note(kind, "", "every RDMA cable unusable until the whole cluster restarts");
  } else if (f.kind == FaultKind::kTcpInstability) {
    for (const int node : engine::tcp_instability_reboots(s_, f))
      sg4::Actor::create("tcp-reboot", sg4::Host::by_name(Simulation::kControlHost),
                         [this, node] { restart(node, engine::kTcpPanic); });
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
