// Measures every pair of ranks over a runtime, one pair at a time so no two
// measurements share a CPU or a link: round-trip latency by ping-pong of small
// messages, bandwidth by timed large transfers each way. The result becomes a
// link card (catalog format) the simulator loads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/runtime.hpp"

namespace hw {

struct ProbeOptions {
  int pings = 50;                      // round trips per pair (the median counts)
  std::uint64_t bulk_bytes = 1 << 20;  // per timed transfer
  int bulk_repeats = 3;                // per direction, after one untimed warm-up
  double timeout_s = 30;               // bounds every receive
};

struct PairFigures {
  int a = 0, b = 0;         // a < b
  double latency_s = 0;     // median round trip / 2
  double bandwidth_ab = 0;  // bytes/s, median of the repeats
  double bandwidth_ba = 0;
};

// Every rank calls it with the same options; rank 0 gets every pair's
// figures (in pair order), the others an empty vector.
std::vector<PairFigures> probe_links(engine::Runtime& rt, const ProbeOptions& o);
// The mesh busy as in a run: every rank sends a small message to every other
// and waits for all of theirs, o.pings times at once. Every rank calls it;
// rank 0 gets the median round over all ranks, the others 0.
double busy_round_s(engine::Runtime& rt, const ProbeOptions& o);

// The figures as JSON ([{"a", "b", "latency_s", "bandwidth_ab", "bandwidth_ba"}, ...]) and back;
// figures_from_json throws std::runtime_error on anything else.
nlohmann::json figures_json(const std::vector<PairFigures>& pairs);
std::vector<PairFigures> figures_from_json(const nlohmann::json& j);

// A link card named `name`: the median of the pairs' latencies and of their
// bandwidths (both directions), per-pair figures in its notes, and the
// transport's frames (engine::LinkCard). With a `busy_round_s`, its
// per-message overhead is what a busy round took beyond an idle message: the
// simulator's round is one overhead per peer, then one message's latency.
// REQUIRES: !pairs.empty().
nlohmann::ordered_json link_card(const std::string& name, const std::vector<PairFigures>& pairs,
                                 const std::string& port_kind, std::size_t frame_bytes, std::size_t frame_header_bytes,
                                 double busy_round_s = 0);

}  // namespace hw
