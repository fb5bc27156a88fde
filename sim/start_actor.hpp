// Starting an actor on a node's host, which faults may have turned off.
#pragma once

#include <functional>
#include <simgrid/s4u/Actor.hpp>
#include <string>

namespace sim {

// `fn` as an actor named `name` on `host`; null when the host is off. A dead
// machine starts nothing: what would have run there is simply absent, and the
// silence is what failure detection notices.
simgrid::s4u::ActorPtr start_actor(const std::string& name, simgrid::s4u::Host* host, std::function<void()> fn);

}  // namespace sim
