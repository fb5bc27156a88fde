// Why a token takes as long as it does: one decode token (and one prefill
// step) on each node split into seven terms that add up to its measured time,
// with the physical floor beside them. report.json's "bottleneck", report.md,
// report.html, the calibration report and the scaling view all read it.
//
// How a step's time is attributed (docs/running.md, "Why not faster"):
//   compute, the node's own ops, split by the cost model's roofline terms of
//     the same ops (each kernel the longer of its bytes / achieved memory
//     bandwidth and its FLOPs / achieved peak, plus its dispatch):
//       weight_reads   the kernels bound by the bytes they read (weights, KV cache, activations)
//       arithmetic     the kernels bound by their FLOPs
//       dispatch       per-kernel launch cost (and per routed expert read)
//   communication, inside send/recv while a message was under way, split in
//     proportion to what the link card charges the step's messages:
//       collective_latency    messages x (latency + per-message overheads)
//       collective_bandwidth  bytes / link bandwidth
//       relay                 a detour's second hop (bytes forwarded, and their messages' latency)
//   waiting, the rest of the interval: blocked on a peer that had not sent
//     yet, or idle between steps.
//   floor: the same kernels at the hardware card's full memory bandwidth or
//     peak FLOP/s, whichever binds, with no dispatch: the time no software
//     beats (in decode, the bytes read / memory bandwidth).
// A decode token is the median one: of the steps that produced decode tokens,
// each weighted by its tokens, the one whose interval (the previous step's
// end to its end: how far apart a request's tokens are) is the median, as
// the ITL p50 is. A prefill step: the median step carrying a prompt chunk,
// from its start to its end.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/input/scenario.hpp"
#include "engine/node/run_result.hpp"

namespace engine {

struct TokenTerms {
  double token_s = 0;  // the step's interval
  double weight_reads_s = 0, arithmetic_s = 0, dispatch_s = 0;
  double latency_s = 0, bandwidth_s = 0, relay_s = 0;
  double waiting_s = 0;
  double floor_s = 0;     // 0 when the ops were measured, not modelled
  double tokens = 0;      // new tokens the step processed
  bool measured = false;  // compute timed by a backend, not the cost model: all of it under arithmetic
  double compute_s() const { return weight_reads_s + arithmetic_s + dispatch_s; }
  double comm_s() const { return latency_s + bandwidth_s + relay_s; }
};

enum class StepKind { kDecode, kPrefill };

// One node's median step of `kind`; nullopt when it ran none.
std::optional<TokenTerms> node_terms(const NodeResult& node, StepKind kind);

// {decode, prefill}: each {node (the one that waited least: it sets the pace),
// its terms, nodes: [{node, hardware, terms}]}, null when no such step ran.
nlohmann::ordered_json bottleneck_json(const Scenario& s, const RunResult& r);

// The terms of a "decode" or "prefill" object of bottleneck_json as one line:
// "31.37 ms = weight reads 8.00 + arithmetic 0.00 + ... + waiting 0.64; floor 7.13 ms".
std::string terms_line(const nlohmann::ordered_json& terms);

// report.md's section on a report's "bottleneck" (and its scaling view, when
// it has one); `itl` is the summary's itl_s, which the decode token matches.
std::string bottleneck_markdown(const nlohmann::ordered_json& bottleneck, const nlohmann::ordered_json& itl);
// A scaling view (sim/studies/scaling.hpp) as a Markdown table, and as plain
// text lines for the console.
std::string scaling_markdown(const nlohmann::ordered_json& scaling);
std::string scaling_text(const nlohmann::ordered_json& scaling);
// What held a point of a scaling view back: "dispatch (+10.93 ms past perfect
// scaling), then collective latency (+0.79 ms)"; "" for the first point.
std::string held_back(const nlohmann::ordered_json& point);

// The seven terms' keys in report.json and their names, in order.
struct TermName {
  const char* key;
  const char* name;
};
const std::vector<TermName>& term_names();

}  // namespace engine
