#include "sim/flow_board.hpp"

#include <algorithm>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace sim {

FlowBoard::FlowBoard(int world) : world_(world), waiting_(world, 0) {
  for (int r = 0; r < world; ++r) wake_.push_back(sg4::Semaphore::create(0));
}

FlowBoard::~FlowBoard() = default;

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

}  // namespace sim
