// Request logs replayed as a workload: CSV or JSON Lines, one request a row,
// read in the column layouts teams already have:
//   meshinfer  arrival_s, prompt_tokens, output_tokens
//   Azure LLM inference traces  TIMESTAMP ("2023-11-16 18:15:46.6805900"), ContextTokens, GeneratedTokens
//   BurstGPT   Timestamp (seconds), Request tokens, Response tokens
// Other columns are ignored. Arrivals count from the log's first row.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/input/workload.hpp"

namespace engine {

// The requests of the log `file`, in arrival order, ids from 0. `time_scale`
// multiplies arrival times (0.5: twice as fast); `window`: only [a, b) of the
// log's seconds, arrivals then counting from a. A row that cannot be a request
// (a missing or non-numeric field, a token count below 1) is refused:
// InputError naming the file, "line N" and the reason.
std::vector<Request> read_request_trace(const std::string& file, double time_scale = 1,
                                        std::optional<std::pair<double, double>> window = std::nullopt);

}  // namespace engine
