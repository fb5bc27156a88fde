// Requests of a workload: a replayed log's, or drawn from the scenario's seeded distributions.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/input/scenario.hpp"

namespace engine {

// A trace workload's first w.requests requests, else w.requests drawn with `seed`.
std::vector<Request> make_requests(const Workload& w, std::uint64_t seed);

// Seeded prompt token ids in [0, vocab), one list per request (by id), for
// runs that compute real tokens.
std::vector<std::vector<int>> make_prompt_ids(const std::vector<Request>& requests, int vocab, std::uint64_t seed);

}  // namespace engine
