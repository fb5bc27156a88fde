// Requests of a workload, drawn from the scenario's seeded distributions.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/scenario.hpp"

namespace engine {

struct Request {
  int id = 0;
  int prompt_tokens = 0;
  int output_tokens = 0;
  // Open loop: the Poisson arrival time. Closed loop: negative, since a
  // request arrives when an earlier one finishes (the first `concurrency` at 0).
  double arrival_s = -1;
};

std::vector<Request> make_requests(const Workload& w, std::uint64_t seed);

// Seeded prompt token ids in [0, vocab), one list per request (by id), for
// runs that compute real tokens.
std::vector<std::vector<int>> make_prompt_ids(const std::vector<Request>& requests, int vocab, std::uint64_t seed);

}  // namespace engine
