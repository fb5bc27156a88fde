// One exercise of a transport's detour (Runtime::route_via), run the same on
// TCP and on verbs: three ranks, the two ends routed through rank 1.
#pragma once

#include <string>

#include "engine/base/runtime.hpp"

namespace testsupport {

// Ranks 0 and 2 route to each other through rank 1, which takes a second
// before it moves any bytes: nothing may arrive before then, and then every
// message (real and size-only, up to 1 MiB), in order and whole, both ways,
// while rank 1's own inbox stays empty. Returns "answered" on rank 0,
// "relayed" on rank 1 and "all" on rank 2, else what went wrong.
// REQUIRES: rt.world() == 3, every rank calls it.
std::string exercise_detour(engine::Runtime& rt);

}  // namespace testsupport
