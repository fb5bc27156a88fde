// What a scenario says: cluster, model, parallelism, workload, faults, expectations.
// Reading one from its file is scenario_file.hpp's.
#pragma once

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/enums.hpp"
#include "engine/cards/catalog.hpp"

namespace engine {

// The names a scenario may use (the schema's enums must match; a test checks).
// Strategies, policies, fault kinds and fabric types: engine/base/enums.hpp.
inline constexpr auto kParallelisms = [] {
  std::array<std::string_view, Names<Strategy>::value.size() + 1> out{};
  std::copy(Names<Strategy>::value.begin(), Names<Strategy>::value.end(), out.begin());
  out.back() = "auto";
  return out;
}();
inline constexpr std::array<std::string_view, 12> kMetrics = {
    "decode_tokens_per_s", "prefill_tokens_per_s", "ttft_p50_s",  "ttft_p99_s", "itl_p50_s",       "itl_p99_s",
    "failed_requests",     "completed_requests",   "simulated_s", "uptime",     "request_success", "recovery_s"};

struct NodeSpec {
  std::string name;
  std::string hardware;  // catalog hardware card name
  int threads = 0;       // a computing rank's threads; 0: its host's cores shared by the ranks there
};

// One physical cable (or, for a full mesh, one of the generated ones).
struct Cable {
  int a = 0, b = 0;            // node indexes
  int port_a = 0, port_b = 0;  // 1-based, among the node's ports of the link's port_kind;
                               // 0 on a switched link (no port taken)
  std::string link;            // link card name
};

struct Fabric {
  FabricType type = FabricType::kFullMesh;
  std::string link;                           // link card of the full mesh / default for cables
  std::vector<Cable> cables;                  // always filled: generated for full-mesh
  std::optional<std::string> secondary_link;  // fallback network, e.g. "10gbe"
};

struct Distribution {
  std::string kind = "fixed";   // "fixed", "uniform", "normal", "lognormal"
  double value = 0;             // fixed
  double min = 0, max = 0;      // uniform, and clamp bounds for the others
  double mean = 0, stddev = 0;  // normal / lognormal (of the value, not its log)
};

struct Request {
  int id = 0;
  int prompt_tokens = 0;
  int output_tokens = 0;
  // Open loop: the Poisson (or logged) arrival time. Closed loop: negative, since a
  // request arrives when an earlier one finishes (the first `concurrency` at 0).
  double arrival_s = -1;
  friend bool operator==(const Request&, const Request&) = default;
};

struct Workload {
  int requests = 1;
  Distribution prompt_tokens;
  Distribution output_tokens;
  std::string arrival = "closed";  // "closed", "poisson", or "trace" (a replayed log)
  std::vector<Request> trace;      // "trace": the log's requests (engine/input/request_trace.hpp)
  int concurrency = 1;             // closed loop
  double rate_per_s = 0;           // poisson
  int prefill_chunk = 512;         // tokens per prefill chunk
  int max_batch = 16;              // decode batch cap
  // The client: a request interrupted by a recovery is sent again with the
  // same id (so it resumes, never restarts) up to this many tries in all.
  int max_tries = 3;
  double retry_backoff_s = 0.1;
};

struct FaultSpec {
  double at_s = 0;
  FaultKind kind = FaultKind::kLinkDown;
  std::string target;        // node name, or "a-b" for a link; empty for fabric faults
  int node = -1, peer = -1;  // the target's node indexes (peer: the link's other end)
  double duration_s = 0;     // 0: until another event
  double factor = 1;         // degrade bandwidth / slow speed factor
                             // (the fraction kept, in (0, 1])
  double added_latency_s = 0;
  double period_s = 0, duty = 0;  // flap
  double loss = 0, reorder = 0;   // rdma-packet-loss: the chance a packet is lost, or sent after the next
  // rdma-stack-failure: IP over the same Thunderbolt ports goes on (heartbeats,
  // TCP); false: it dies with the stack. Nobody has reported which a Mac does.
  bool ip_survives = false;
};

struct Expectation {
  std::string metric;  // e.g. "decode_tokens_per_s", "ttft_p99_s", "failed_requests"
  std::string op;      // "min", "max", "eq"
  double bound = 0;
  std::string json_path;
  bool may_be_absent = false;  // a run that never produces the metric (no recovery) passes; else it fails
};

struct Scenario {
  std::string file;
  std::string name;
  std::string description;
  unsigned long long seed = 1;
  std::vector<NodeSpec> nodes;
  Fabric fabric;
  std::string model;
  std::string quant;
  std::string model_dir;                // a model directory computed from its weights (absolute); else empty
  std::optional<ModelCard> model_card;  // the card of a model named by path (its config.json)
  Parallelism parallelism;              // none: "auto"
  std::string profile = "meshinfer";    // software-stack profile in catalog/profiles
  Workload workload;
  std::vector<FaultSpec> faults;
  RecoveryPolicy recovery = RecoveryPolicy::kFailStop;
  double heartbeat_s = 0.05, heartbeat_timeout_s = 0.25;
  double deadline_s = 3600;
  SimulationLevel level = SimulationLevel::kFlow;  // the default: message level only where asked
  std::vector<Expectation> expectations;

  int node_index(const std::string& name) const;  // -1 when unknown
};

// The fault as an entry of a scenario's `faults` list (what the loader reads
// back), so a generated schedule can be replayed with `meshinfer run`.
nlohmann::ordered_json fault_json(const FaultSpec& f);

}  // namespace engine
