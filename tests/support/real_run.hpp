// Small scenarios sized for real-process tests (seconds, not minutes), and
// what those tests read back from a launch.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace testsupport {

// Llama-3.2-3B 8-bit, tensor parallel over `nodes` M3 Ultras on `link`,
// `requests` closed-loop requests of `output_tokens` tokens each.
nlohmann::json small_scenario(const std::string& name, int nodes, int requests, int output_tokens,
                              const std::string& recovery = "replan", const std::string& link = "tb5-tcp");

// Writes `j` to dir/name.json; returns the path.
std::string write_json(const std::string& dir, const std::string& name, const nlohmann::json& j);

// The pid of each rank, from launch's "launch: rank R is pid P" lines.
std::vector<pid_t> rank_pids(const std::string& launch_output, int world);

// The value after "run clock zero at unix " on the first line that has it; -1 when none.
double clock_zero_unix_s(const std::string& output);

double unix_now_s();

}  // namespace testsupport
