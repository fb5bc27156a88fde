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

#include "engine/base/runtime.hpp"

namespace hw {

struct ProbeOptions {
  int pings = 50;                      // round trips per pair (the median counts)
  std::uint64_t bulk_bytes = 1 << 20;  // per timed transfer
  int bulk_repeats = 3;                // per direction, after one untimed warm-up
  double timeout_s = 30;               // bounds every receive
  // Sizes of the busy rounds after the small message's: where a link's
  // per-message costs give way to its bandwidth.
  std::vector<std::uint64_t> round_sizes = {1 << 10, 4 << 10, 16 << 10, 64 << 10};
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
// A round of the mesh busy as in a run: every rank sends a message of `bytes`
// to every other and waits for all of theirs, o.pings times back to back.
struct BusyRound {
  std::uint64_t bytes = 0;
  double round_s = 0;  // the median round over all ranks
};
// One busy round per size: a small message's, then each of o.round_sizes.
// Every rank calls it; rank 0 gets the rounds, the others an empty vector.
std::vector<BusyRound> busy_rounds(engine::Runtime& rt, const ProbeOptions& o);

// The figures as JSON ([{"a", "b", "latency_s", "bandwidth_ab", "bandwidth_ba"}, ...]) and back;
// figures_from_json throws std::runtime_error on anything else.
nlohmann::json figures_json(const std::vector<PairFigures>& pairs);
std::vector<PairFigures> figures_from_json(const nlohmann::json& j);

// A link card named `name`: the median of the pairs' latencies and of their
// bandwidths (both directions), per-pair figures in its notes, and the
// transport's frames (engine::LinkCard). With `rounds`, its per-message
// overhead is what the small message's busy round took beyond an idle message
// (the simulator's round is one overhead per peer, then one message's
// latency), and its wire_time_by_size what each larger round took beyond the
// small one.
// REQUIRES: !pairs.empty(); rounds empty or as busy_rounds returns them.
nlohmann::ordered_json link_card(const std::string& name, const std::vector<PairFigures>& pairs,
                                 const std::string& port_kind, std::size_t frame_bytes, std::size_t frame_header_bytes,
                                 const std::vector<BusyRound>& rounds = {});

}  // namespace hw
