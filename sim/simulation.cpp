#include "sim/simulation.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

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
  // REFERENCE.md: LV08's default factors distort latency (x13.01) and
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

void build_platform(const PlatformSpec& p) {
  auto* zone = sg4::create_full_zone("mesh");
  std::vector<sg4::Host*> hosts;
  for (const auto& name : p.hosts) hosts.push_back(zone->create_host(name, 1e12)->seal());
  std::vector<sg4::Link*> nics(p.hosts.size(), nullptr);
  auto nic_of = [&](int h, const engine::LinkCard& card) {
    if (!nics[h])
      nics[h] = zone->create_split_duplex_link("nic-" + p.hosts[h], card.bandwidth)->set_latency(card.latency_s / 2)->seal();
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
  zone->seal();
}

}  // namespace

Simulation::Simulation(PlatformSpec platform) : platform_(std::move(platform)), engine_(make_engine()) {
  build_platform(platform_);
  errors_.resize(platform_.hosts.size());
}

Simulation::~Simulation() = default;

void Simulation::spawn_all(const NodeMain& main) {
  const int n = static_cast<int>(platform_.hosts.size());
  std::vector<sg4::ActorPtr> actors;
  for (int r = 0; r < n; ++r) {
    actors.push_back(sg4::Actor::create(platform_.hosts[r], sg4::Host::by_name(platform_.hosts[r]), [this, r, main] {
      SimRuntime rt(r, platform_);
      try {
        main(rt);
      } catch (const simgrid::ForcefulKillException&) {
        throw;  // the host died: SimGrid unwinds the actor
      } catch (const std::exception& e) {
        errors_[r] = e.what();
      }
    }));
  }
  // Permanent receivers make every transfer start at send time.
  for (int dst = 0; dst < n; ++dst)
    for (int src = 0; src < n; ++src)
      if (src != dst) sg4::Mailbox::by_name(mailbox_name(src, dst))->set_receiver(actors[dst]);
}

double Simulation::run() {
  engine_->run();
  return sg4::Engine::get_clock();
}

}  // namespace sim
