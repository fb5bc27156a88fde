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
      if (!listening_) return;
      ++listening_->state_changes_;
      listening_->states_[resource].emplace_back(sg4::Engine::get_clock(), on);
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
  c.changes_when_opened = state_changes_;
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

bool FlowBoard::lost(const sg4::Host* from, const FlowMessage& m, double left_s, double arrived_s) const {
  const auto was_down = [&](const void* resource) {
    const auto found = states_.find(resource);
    if (found == states_.end()) return false;
    const auto& changes = found->second;
    auto next = std::lower_bound(changes.begin(), changes.end(), std::make_pair(left_s, false));
    if (next != changes.begin() && !std::prev(next)->second) return true;  // off when it left
    for (; next != changes.end() && next->first <= arrived_s; ++next)
      if (!next->second) return true;
    return false;
  };
  if (was_down(from)) return true;
  for (int i = 0; i < m.hop_count; ++i) {
    if (!m.hops[i].links) return true;
    for (const sg4::Link* l : *m.hops[i].links)
      if (was_down(l)) return true;
  }
  return false;
}

}  // namespace sim
