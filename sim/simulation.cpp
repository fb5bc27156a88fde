#include "sim/simulation.hpp"

#include <xbt/log.h>

#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>

#include "sim/sim_runtime.hpp"

namespace sg4 = simgrid::s4u;

namespace sim {

namespace {

std::unique_ptr<sg4::Engine> make_engine() {
  static char program[] = "meshinfer";
  static char* argv[] = {program, nullptr};
  int argc = 1;
  auto engine = std::make_unique<sg4::Engine>(&argc, argv);
  xbt_log_control_set("root.thresh:critical");
  // docs/reference-facts.md#simgrid-notes: LV08's default factors distort latency (x13.01) and
  // bandwidth (x0.97), and TCP windowing caps flows at gamma / (2 latency).
  // Every figure comes from the link cards instead.
  sg4::Engine::set_config("network/latency-factor:1");
  sg4::Engine::set_config("network/bandwidth-factor:1");
  sg4::Engine::set_config("network/TCP-gamma:1e15");
  sg4::Engine::set_config("network/crosstraffic:0");
  return engine;
}

void add_host_pair_route(sg4::NetZone* zone, sg4::Host* a, sg4::Host* b, std::vector<sg4::LinkInRoute> links) {
  zone->add_route(a->get_netpoint(), b->get_netpoint(), nullptr, nullptr, links, true);
}

// Each node's second host is the same machine on its secondary NIC: a route
// touching one of them goes through the switch, so nodes that moved and nodes
// that have not yet can still reach each other.
void build_secondary_network(sg4::NetZone* zone, const PlatformSpec& p, const std::vector<sg4::Host*>& primary) {
  using D = sg4::LinkInRoute::Direction;
  const auto& card = *p.secondary;
  std::vector<sg4::Host*> second;
  std::vector<sg4::Link*> nics;
  for (const auto& name : p.hosts) {
    second.push_back(zone->create_host(secondary_host(name), 1e12)->seal());
    nics.push_back(zone->create_split_duplex_link("secondary-nic-" + name, card.bandwidth)
                       ->set_latency(card.latency_s / 2)
                       ->seal());
  }
  for (std::size_t a = 0; a < p.hosts.size(); ++a)
    for (std::size_t b = 0; b < p.hosts.size(); ++b) {
      if (a == b) continue;
      const std::vector<sg4::LinkInRoute> route{{nics[a], D::UP}, {nics[b], D::DOWN}};
      zone->add_route(second[a]->get_netpoint(), second[b]->get_netpoint(), nullptr, nullptr, route, false);
      zone->add_route(second[a]->get_netpoint(), primary[b]->get_netpoint(), nullptr, nullptr, route, false);
      zone->add_route(primary[a]->get_netpoint(), second[b]->get_netpoint(), nullptr, nullptr, route, false);
    }
}

void build_platform(const PlatformSpec& p) {
  auto* zone = sg4::create_full_zone("mesh");
  std::vector<sg4::Host*> hosts;
  for (const auto& name : p.hosts) hosts.push_back(zone->create_host(name, 1e12)->seal());
  zone->create_host(Simulation::kControlHost, 1e12)->seal();
  std::vector<sg4::Link*> nics(p.hosts.size(), nullptr);
  auto nic_of = [&](int h, const engine::LinkCard& card) {
    if (!nics[h])
      nics[h] =
          zone->create_split_duplex_link("nic-" + p.hosts[h], card.bandwidth)->set_latency(card.latency_s / 2)->seal();
    return nics[h];
  };
  for (const Wire& w : p.wires) {
    using D = sg4::LinkInRoute::Direction;
    if (w.card.switched) {
      // One NIC per node into a switch: flows to and from a node share it.
      add_host_pair_route(zone, hosts[w.a], hosts[w.b], {{nic_of(w.a, w.card), D::UP}, {nic_of(w.b, w.card), D::DOWN}});
    } else {
      auto* link = zone->create_split_duplex_link("cable-" + p.hosts[w.a] + "-" + p.hosts[w.b], w.card.bandwidth)
                       ->set_latency(w.card.latency_s)
                       ->seal();
      add_host_pair_route(zone, hosts[w.a], hosts[w.b], {{link, D::UP}});
    }
  }
  if (p.secondary) build_secondary_network(zone, p, hosts);
  zone->seal();
}

}  // namespace

Simulation::Simulation(PlatformSpec platform, engine::SimulationLevel level)
    : platform_(std::move(platform)), engine_(make_engine()) {
  build_platform(platform_);
  errors_.resize(platform_.hosts.size());
  const int n = static_cast<int>(platform_.hosts.size());
  for (int from = 0; from < n; ++from)
    for (int to = 0; to < n; ++to) numbering_.push_back({.account = {.from = from, .to = to}});
  speed_.assign(platform_.hosts.size(), 1.0);
  if (level == engine::SimulationLevel::kFlow) flows_ = std::make_unique<FlowBoard>(platform_.hosts.size());
}

Simulation::~Simulation() = default;

void Simulation::spawn_all(const NodeMain& main, const NodeMain& companion) {
  const int n = static_cast<int>(platform_.hosts.size());
  const int channels = companion ? 2 : 1;
  std::vector<std::vector<sg4::ActorPtr>> actors(channels);
  for (int r = 0; r < n; ++r) {
    auto* host = sg4::Host::by_name(platform_.hosts[r]);
    actors[0].push_back(sg4::Actor::create(platform_.hosts[r], host, [this, r, main] {
      // SimGrid's clock is not readable once the run is over: note when the last node ends.
      struct NoteEnd {
        double& end;
        ~NoteEnd() { end = std::max(end, sg4::Engine::get_clock()); }
      } note_end{end_s_};
      SimRuntime rt(r, platform_, speed_, 0, flows_.get(), flows_ ? quiet_until_s_ : 0, &numbering_, &rdma_failed_);
      try {
        main(rt);
      } catch (const simgrid::ForcefulKillException&) {
        throw;  // the host died: SimGrid unwinds the actor
      } catch (const std::exception& e) {
        errors_[r] = e.what();
      }
      rt.settle();
    }));
    if (companion) {
      actors[1].push_back(sg4::Actor::create(platform_.hosts[r] + "-companion", host, [this, r, companion] {
        SimRuntime rt(r, platform_, speed_, 1);
        companion(rt);
      }));
      actors[1].back()->daemonize();
    }
  }
  // Permanent receivers make every transfer start at send time.
  for (int c = 0; c < channels; ++c)
    for (int dst = 0; dst < n; ++dst)
      for (int src = 0; src < n; ++src)
        if (src != dst) sg4::Mailbox::by_name(mailbox_name(src, dst, c))->set_receiver(actors[c][dst]);
}

void start_deadline_watchdog(double deadline_s, std::vector<engine::RunEvent>& log) {
  sg4::Actor::create("deadline", sg4::Host::by_name(Simulation::kControlHost), [deadline_s, &log] {
    sg4::this_actor::sleep_until(deadline_s);
    log.push_back({deadline_s, "deadline", "", "nodes still running at the scenario's deadline were stopped"});
    sg4::Actor::kill_all();
  })->daemonize();
}

std::vector<engine::Sequence> Simulation::sequences() const {
  std::vector<engine::Sequence> out;
  for (const Numbering& n : numbering_) out.push_back(n.account);
  return out;
}

double Simulation::run() {
  engine_->run();
  return end_s_;
}

}  // namespace sim
