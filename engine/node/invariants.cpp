#include "engine/node/invariants.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace engine {

std::vector<InvariantCheck> check_invariants(const Scenario& s, const RunResult& r) {
  InvariantCheck ordered{"token times never go backwards", {}};
  InvariantCheck accounted{"every request completes with exactly its output tokens or fails with a cause", {}};
  InvariantCheck deadline{"the run ends by its deadline", {}};
  for (const RequestRecord& rec : r.requests) {
    const int id = rec.request.id;
    const auto& t = rec.token_times;
    if (!std::is_sorted(t.begin(), t.end()))
      ordered.violations.push_back(fmt::format("request {}: token times go backwards", id));
    if (!rec.error.empty()) continue;
    if (rec.finish_s < 0) {
      accounted.violations.push_back(fmt::format("request {} neither completed nor failed with a cause", id));
    } else if (static_cast<int>(t.size()) != rec.request.output_tokens) {
      accounted.violations.push_back(fmt::format("request {} completed with {} tokens, expected exactly {}", id,
                                                 t.size(), rec.request.output_tokens));
    }
  }
  for (const RunEvent& e : r.events)
    if (e.kind == "deadline")
      deadline.violations.push_back(fmt::format("the run was still going at its deadline ({} s)", e.t_s));
  if (r.end_s > s.deadline_s)
    deadline.violations.push_back(
        fmt::format("the run ended at {} s, after its deadline ({} s)", r.end_s, s.deadline_s));
  return {ordered, accounted, deadline};
}

std::vector<std::string> all_violations(const std::vector<InvariantCheck>& checks) {
  std::vector<std::string> out;
  for (const auto& c : checks) out.insert(out.end(), c.violations.begin(), c.violations.end());
  return out;
}

}  // namespace engine
