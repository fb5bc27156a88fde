#include "sim/flow_board.hpp"

#include <algorithm>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace sim {

FlowBoard::FlowBoard(int world) : world_(world), waiting_(world, 0) {
  for (int r = 0; r < world; ++r) wake_.push_back(sg4::Semaphore::create(0));
  // SimGrid's state-change signals cannot be disconnected: connected once,
  // they reach the board of the simulation running (one at a time in a process).
  static const bool connected = [] {
    const auto note = [](const void* resource, bool on) {
      if (on || !listening_) return;
      ++listening_->outages_;
      listening_->outage_times_[resource].push_back(sg4::Engine::get_clock());
    };
    sg4::Link::on_state_change_cb([note](const sg4::Link& l) { note(&l, l.is_on()); });
    sg4::Host::on_state_change_cb([note](const sg4::Host& h) { note(&h, h.is_on()); });
    return true;
  }();
  (void)connected;
  listening_ = this;
}

FlowBoard::~FlowBoard() {
  if (listening_ == this) listening_ = nullptr;
}

FlowBoard::Collective& FlowBoard::join(const Key& key, const std::vector<int>& members) {
  auto& slot = open_[key];
  if (slot) return *slot;
  if (spare_.empty()) {
    slot = std::make_unique<Collective>();
    slot->parts.resize(world_);
  } else {
    slot = std::move(spare_.back());
    spare_.pop_back();
  }
  Collective& c = *slot;
  c.members = members;
  for (int m : members) c.parts[m].arrived_s = -1;
  c.arrived = c.left = 0;
  c.timed = false;
  c.opened_s = sg4::Engine::get_clock();
  c.outages_when_opened = outages_;
  return c;
}

void FlowBoard::arrived(Collective& c, int rank) {
  if (++c.arrived < static_cast<int>(c.members.size())) return;
  timer_.time(c.members, c.parts, c.timing);
  c.timed = true;

  for (int m : c.members)
    if (waiting_[m] && m != rank) wake_[m]->release();
}

bool FlowBoard::wait(int rank, double deadline_s) {
  waiting_[rank] = 1;
  const bool timed_out = wake_[rank]->acquire_timeout(std::max(0.0, deadline_s - sg4::Engine::get_clock()));
  waiting_[rank] = 0;
  return !timed_out;
}

void FlowBoard::leave(const Key& key) {
  auto it = open_.find(key);
  if (it == open_.end() || ++it->second->left < static_cast<int>(it->second->members.size())) return;
  spare_.push_back(std::move(it->second));
  open_.erase(it);
}

const Route& FlowBoard::route(const sg4::Host* from, const sg4::Host* to) {
  auto [it, added] = routes_.try_emplace({from, to});
  if (added) {
    double latency = 0;
    from->route_to(to, it->second, &latency);
  }
  return it->second;
}

bool FlowBoard::lost(const Collective& c, const sg4::Host* from, const FlowMessage& m, double arrived_s) const {
  const double until = arrived_s < 0 ? sg4::Engine::get_clock() : arrived_s;
  const auto went_down = [&](const void* resource) {
    const auto times = outage_times_.find(resource);
    if (times == outage_times_.end()) return false;
    const auto first = std::lower_bound(times->second.begin(), times->second.end(), c.opened_s);
    return first != times->second.end() && *first <= until;
  };
  if (went_down(from)) return true;
  for (int i = 0; i < m.hop_count; ++i) {
    if (!m.hops[i].links) return true;
    for (const sg4::Link* l : *m.hops[i].links)
      if (went_down(l)) return true;
  }
  return false;
}

}  // namespace sim
