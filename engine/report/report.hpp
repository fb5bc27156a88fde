// What a run produced, as files a person or CI reads: report.json (stable
// schema "meshinfer.report/1", built here), report.md (markdown.hpp),
// report.html (report_html.hpp) and trace.json (trace.hpp, opens in Perfetto).
// Everything here is a pure function of its inputs, so the same run gives
// byte-identical files.
//
// report.json, keys in this order:
//   schema        "meshinfer.report/1"
//   scenario      {name, file, description, seed, model, quant, parallelism, profile,
//                  recovery: {policy, heartbeat_s, heartbeat_timeout_s}}
//   build         {version, git}
//   plan          {strategy, kv_capacity_tokens, nodes: [{rank, node, hardware,
//                  layers: [first, last] (inclusive), heads, kv_heads, ffn_fraction,
//                  experts, vocab_fraction, weight_gb, memory_gb (usable), free_gb,
//                  kv_bytes_per_token}]}                         GB = 1e9 bytes
//   summary       {decode_tokens_per_s, prefill_tokens_per_s,
//                  per_request_decode_tokens_per_s, ttft_s: {p50, p99, mean},
//                  itl_s: {p50, p99, mean}, requests: {total, completed, failed, retried},
//                  output_tokens, simulated_s, uptime, out_of_service_s, request_success}
//   bottleneck    {decode, prefill}, each null when no such step ran, else {node (the one
//                  that waited least: it sets the pace), token_s, weight_reads_s, arithmetic_s,
//                  dispatch_s, collective_latency_s, collective_bandwidth_s, relay_s, waiting_s
//                  (the seven terms, adding up to token_s), floor_s, tokens, nodes: [{node,
//                  hardware, the same figures}]}: one median decode token (its token_s is the
//                  ITL p50) and prefill step, split as engine/report/bottleneck.hpp says;
//                  `run` adds scaling (sim/studies/scaling.hpp): the model on 1, 2, 4 ... nodes
//   nodes         [{rank, name, hardware, compute_s, comm_s, idle_s, utilization,
//                   bytes_sent, messages_sent, error}]
//   links         [{a, b, link, bytes_a_to_b, bytes_b_to_a, utilization, down}]  down only
//                  when the cable went down: [{from_s, to_s}] (to_s null: down at the end),
//                  as the run's faults held it (engine/faults/cable_downtime.hpp)
//   link_cards    [{name, bandwidth_gbps, latency_us, per_message_overhead_us, frame_bytes}]
//                  every link card the run used (cables and secondary network), by name
//   requests      [{id, prompt_tokens, output_tokens, arrival_s, first_token_s,
//                   finish_s, ttft_s, tokens, tries, status, error, output_ids}]  (null:
//                   never happened; tries: the client's sends of the id, >1 after a
//                   recovery cut it off; output_ids: the token ids, only when a model directory ran)
//   timeline      {buckets, bucket_s,                 the run in equal time buckets
//                  nodes: [{name, compute_s: [..], comm_s: [..], idle_s: [..]}],
//                  links: [{a, b, link, bandwidth_bytes_per_s,
//                           bytes_a_to_b: [..], bytes_b_to_a: [..]}],
//                  tokens: [..]}                      one value per bucket
//   distributions {ttft_s, itl_s: {start, width, counts: [..]}}   histograms
//   events        (fault runs only) [{t_s, kind, target, detail}] in time order
//                  (engine/base/events.hpp RunEvent): faults injected and what the engine
//                  did about them; target a node name, "a-b" for a link, or empty
//   sequences     (only when a message was lost) [{from, to, taken, numbered, gap_s}]
//                  each sender whose numbered messages showed a receiver a loss
//                  (engine/base/events.hpp Sequence): gap_s when it found a number
//                  skipped (null: never), taken < numbered when it took a message
//                  past one it never took, in its place
//   phases        (fault runs only) [{kind, target, start_s, end_s}], e.g. detect
//                  or recover; end_s null when still open at the end of the run
//   placements    [{t_s, plan}] each re-placement on the survivors and the plan
//                  (as "plan" above) from then on; empty when there was none
//   expectations  [{metric, op, bound, value, pass}]  (filled by check_expectations)
//   report.html draws events and phases when a report has them.
//
// Definitions:
//   decode (prefill) tokens/s: decode (prefill) tokens over the summed duration
//     of the steps that carry any; a mixed step counts in both.
//   ttft: first token minus arrival, over completed requests.
//   itl: gaps between consecutive tokens of every request (failed ones too:
//     their tokens were really produced), pooled.
//   per_request_decode_tokens_per_s: mean over completed requests with two or
//     more tokens of (tokens - 1) / (finish - first token).
//   output_tokens: tokens produced by all requests.
//   request_success: completed / total requests (1 when there were none).
//   out_of_service_s: seconds the cluster could not serve, from the last fault
//     injected before each detection to the recovery that followed, or to the
//     end when none did (run_figures.hpp out_of_service_s).
//   uptime: 1 - out_of_service_s / simulated_s, the fraction of the run the
//     cluster could serve (1 for an empty run). A recovery that loses no
//     request still costs uptime.
//   percentiles: nearest rank on the sorted values; 0 when there are none.
//   link bytes: what each end sent to the other's rank. Traffic is counted by
//     destination, not by cable, so parallel cables between one pair each show
//     the pair's total, and a rerouted detour is charged to the direct cable.
//   timeline: a step's compute, communication and bytes are spread evenly over
//     its span (steps are far shorter than a bucket); idle is the rest of the
//     bucket. Bytes sent between steps (rank 0's step broadcasts) are in the
//     link totals only. tokens: output tokens produced in the bucket.
//   histograms: `counts[i]` values in [start + i*width, start + (i+1)*width);
//     width is 1, 2 or 5 times a power of ten; no counts when no values.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/cards/catalog.hpp"
#include "engine/input/scenario.hpp"
#include "engine/node/run_result.hpp"
#include "engine/plan/planner.hpp"

namespace engine {

// What a real run's reporting rank prints before its one-line outcome, its
// last line: the launcher ends with that line too, and that rank's status.
inline constexpr const char* kOutcomePrefix = "outcome: ";

// REQUIRES: r.nodes has one entry per s.nodes entry.
nlohmann::ordered_json build_report(const Scenario& s, const Catalog& catalog, const Plan& plan,
                                    const std::string& profile_name, const RunResult& r, unsigned long long seed);

// Creates `dir` and writes report.json, report.md, report.html and trace.json into it.
// Throws std::runtime_error when a file cannot be written.
void write_reports(const std::string& dir, const nlohmann::ordered_json& report, const nlohmann::json& trace);

}  // namespace engine
