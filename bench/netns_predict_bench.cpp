// The simulator's decode-speed prediction against real processes on a shaped
// netns mesh, given the link card `meshinfer probe` measured on that mesh.
// Each run probes a fresh mesh, runs each workload for real once, and
// simulates it on three readings of the same probe, side by side:
//  - idle: the card as probe wrote it before 2026-12: messages padded to whole
//    1500-byte frames, no per-message overhead (latency of an idle ping-pong);
//  - busy: as probe wrote it until 2026-12-02, but for the overhead's small
//    correction (the small message's time on the wire, now in the latency): a
//    TCP byte stream (each frame's headers, no padding), the per-message
//    overhead of every rank messaging every other at once, every message at
//    the bulk bandwidth;
//  - by size: as probe writes it now: busy, plus the time on the wire of
//    messages of 1 to 64 KiB in such rounds (tbf's burst lets a small message
//    through faster than the bulk rate).
// Prints predicted, measured and their ratio per run, then the medians. The
// mesh is shaped two ways by default: the cable of `launch --netns` (50
// Mbit/s, one frame of burst) and a fast one (1 Gbit/s) where the stack's
// per-message cost dominates. Needs root (network namespaces).
// Usage: netns_predict_bench [runs, default 5] [tbf shaping ("" unshaped) ...]
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/netns_mesh.hpp"
#include "support/cli_runner.hpp"
#include "support/real_run.hpp"

namespace {

using nlohmann::json;

constexpr int kWorld = 4;
const std::vector<std::string> kShapings = {hw::cable_tbf(hw::kCableRateBps), hw::cable_tbf(1e9)};

struct Workload {
  std::string label;
  int requests, output_tokens, concurrency;
};
// Batch 8: all-reduces of 48 KB as 12 KB messages. Batch 1: the netns twins'
// small messages (a few hundred bytes), where a message's fixed costs rule.
const std::vector<Workload> kWorkloads = {{"batch 8", 8, 16, 8}, {"batch 1", 4, 64, 1}};

std::string label(const std::string& shaping) { return shaping.empty() ? "unshaped" : shaping; }

double decode_speed(const std::string& report) {
  return json::parse(testsupport::read_file(report))["summary"]["decode_tokens_per_s"].get<double>();
}

void must(const testsupport::CliResult& r, const std::string& what) {
  if (r.exit_code != 0) throw std::runtime_error(what + " failed:\n" + r.output);
}

// The probed card read as it would have been written before: the idle-ping-pong probe's (padded frames, no
// overhead), or the busy probe's before it timed messages by size.
json idle_reading(json card) {
  card["frame_bytes"] = 1500;
  card.erase("frame_header_bytes");
  card["per_message_overhead_us"] = 0;
  card.erase("wire_time_by_size");
  return card;
}
json busy_reading(json card) {
  card.erase("wire_time_by_size");
  return card;
}
json by_size_reading(json card) { return card; }

struct Reading {
  const char* label;
  json (*read)(json);
};
const std::vector<Reading> kReadings = {
    {"idle", idle_reading}, {"busy", busy_reading}, {"by size", by_size_reading}};

struct Figures {
  double overhead_us, measured;
  std::vector<double> predicted;  // per reading
};

std::vector<Figures> measure(int run, const std::string& shaping) {
  hw::NetnsMesh mesh(kWorld, shaping);
  const std::string dir = testsupport::fresh_dir("netns-predict-" + std::to_string(run));
  const std::string cluster = testsupport::write_json(dir, "cluster", mesh.cluster(5000));
  const std::string prefix = " --exec-prefix '" + mesh.exec_prefix() + "'";
  const std::string card = dir + "/veth-probed.json";
  must(testsupport::run_cli("probe --cluster " + cluster + prefix + " --out " + dir + " --name veth-probed" +
                            " --pings 30 --bytes 1000000 --repeats 2 --timeout 60"),
       "probe");
  const json probed = json::parse(testsupport::read_file(card));
  std::vector<std::string> cards;  // per reading, each under the probed card's name
  for (std::size_t k = 0; k < kReadings.size(); ++k)
    cards.push_back(testsupport::write_json(testsupport::fresh_dir(dir + "-reading-" + std::to_string(k)),
                                            "veth-probed", kReadings[k].read(probed)));
  std::vector<Figures> out;
  for (const Workload& w : kWorkloads) {
    json s =
        testsupport::small_scenario("netns-predict", kWorld, w.requests, w.output_tokens, "fail-stop", "veth-probed");
    s["workload"]["prompt_tokens"] = 4;
    s["workload"]["arrival"] = {{"type", "closed"}, {"concurrency", w.concurrency}};
    const std::string scenario = testsupport::write_json(dir, "s", s);
    must(testsupport::run_cli("launch " + scenario + " --hostfile " + cluster + prefix + " --out " + dir +
                              "/real --timeout 60 --card " + card),
         "launch");
    Figures f{probed["per_message_overhead_us"].get<double>(), decode_speed(dir + "/real/report.json"), {}};
    for (std::size_t k = 0; k < cards.size(); ++k) {
      const std::string out_dir = dir + "/sim-" + std::to_string(k);
      must(testsupport::run_cli("run --quiet " + scenario + " --card " + cards[k] + " --out " + out_dir), "run");
      f.predicted.push_back(decode_speed(out_dir + "/report.json"));
    }
    out.push_back(f);
  }
  return out;
}

// A markdown table's rule for `columns` more columns.
std::string rule(std::size_t columns) {
  std::string out;
  for (std::size_t i = 0; i < columns; ++i) out += "---|";
  return out;
}

struct Spread {
  std::vector<double> v;
  std::string text() {
    std::sort(v.begin(), v.end());
    return fmt::format("{:.3f} ({:.3f}-{:.3f})", v[v.size() / 2], v.front(), v.back());
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::vector<std::string> shapings = argc > 2 ? std::vector<std::string>(argv + 2, argv + argc) : kShapings;
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty()) {
    fmt::print(stderr, "netns_predict_bench: {}\n", why);
    return 1;
  }
  fmt::print("Decode speed, {} ranks in network namespaces over veth shaped by tbf; the link card is the one\n",
             kWorld);
  fmt::print("probed on this mesh, in three readings: idle (padded frames, no overhead), busy (per-message\n");
  fmt::print("overhead of a busy round, one bandwidth) and by size (busy, plus each size's time on the wire)\n\n");
  fmt::print("| tbf | workload | run | busy overhead us | measured tok/s |");
  for (const Reading& r : kReadings) fmt::print(" {} tok/s |", r.label);
  for (const Reading& r : kReadings) fmt::print(" {}/measured |", r.label);
  fmt::print("\n|---|---|---|---|---|{}\n", rule(2 * kReadings.size()));
  std::map<std::pair<std::string, std::string>, std::vector<Spread>> ratios;
  for (int run = 1; run <= runs; ++run) {
    for (const std::string& shaping : shapings) {
      const std::vector<Figures> figures = measure(run, shaping);
      for (std::size_t k = 0; k < kWorkloads.size(); ++k) {
        const Figures& f = figures[k];
        auto& spreads = ratios[{label(shaping), kWorkloads[k].label}];
        spreads.resize(kReadings.size());
        fmt::print("| {} | {} | {} | {:.1f} | {:.1f} |", label(shaping), kWorkloads[k].label, run, f.overhead_us,
                   f.measured);
        for (double p : f.predicted) fmt::print(" {:.1f} |", p);
        for (std::size_t r = 0; r < kReadings.size(); ++r) {
          spreads[r].v.push_back(f.predicted[r] / f.measured);
          fmt::print(" {:.3f} |", spreads[r].v.back());
        }
        fmt::print("\n");
      }
    }
  }
  fmt::print("\npredicted/measured, median (min-max)\n\n| tbf | workload |");
  for (const Reading& r : kReadings) fmt::print(" {} |", r.label);
  fmt::print("\n|---|---|{}\n", rule(kReadings.size()));
  for (auto& [key, spreads] : ratios) {
    fmt::print("| {} | {} |", key.first, key.second);
    for (Spread& sp : spreads) fmt::print(" {} |", sp.text());
    fmt::print("\n");
  }
  return 0;
}
