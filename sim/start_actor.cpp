#include "sim/start_actor.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Host.hpp>
#include <utility>

namespace sim {

simgrid::s4u::ActorPtr start_actor(const std::string& name, simgrid::s4u::Host* host, std::function<void()> fn) {
  if (!host->is_on()) return nullptr;
  try {
    return simgrid::s4u::Actor::create(name, host, std::move(fn));
  } catch (const simgrid::HostFailureException&) {
    return nullptr;  // it failed between the check and the start
  }
}

}  // namespace sim
