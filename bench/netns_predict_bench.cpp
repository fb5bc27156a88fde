// The simulator's decode-speed prediction against real processes on a shaped
// netns mesh, given the link card `meshinfer probe` measured on that mesh.
// Each run probes a fresh mesh, runs each workload for real once, and
// simulates it on two readings of the same probe, side by side:
//  - idle: the card as probe wrote it before 2026-12: messages padded to whole
//    1500-byte frames, no per-message overhead (latency of an idle ping-pong);
//  - busy: as probe writes it now: a TCP byte stream (each frame's headers,
//    no padding), and the per-message overhead of every rank messaging every
//    other at once.
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

// The probed card as the idle-ping-pong probe wrote it, under the same name.
std::string idle_reading(const std::string& dir, json card) {
  card["frame_bytes"] = 1500;
  card.erase("frame_header_bytes");
  card["per_message_overhead_us"] = 0;
  return testsupport::write_json(testsupport::fresh_dir(dir + "-idle"), "veth-probed", card);
}

struct Figures {
  double overhead_us, idle, busy, measured;
};

std::vector<Figures> measure(int run, const std::string& shaping) {
  hw::NetnsMesh mesh(kWorld, shaping);
  const std::string dir = testsupport::fresh_dir("netns-predict-" + std::to_string(run));
  const std::string cluster = testsupport::write_json(dir, "cluster", mesh.cluster(5000));
  const std::string prefix = " --exec-prefix '" + mesh.exec_prefix() + "'";
  const std::string card = dir + "/veth-probed.json";
  must(testsupport::run_cli("probe --cluster " + cluster + prefix + " --out " + card +
                            " --pings 30 --bytes 1000000 --repeats 2 --timeout 60"),
       "probe");
  const json probed = json::parse(testsupport::read_file(card));
  const std::string idle_card = idle_reading(dir, probed);
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
    must(testsupport::run_cli("run --quiet " + scenario + " --card " + card + " --out " + dir + "/busy"), "run");
    must(testsupport::run_cli("run --quiet " + scenario + " --card " + idle_card + " --out " + dir + "/idle"), "run");
    out.push_back({probed["per_message_overhead_us"].get<double>(), decode_speed(dir + "/idle/report.json"),
                   decode_speed(dir + "/busy/report.json"), decode_speed(dir + "/real/report.json")});
  }
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
  fmt::print("probed on this mesh, read idle (padded frames, no overhead) and busy (as probe writes it now)\n\n");
  fmt::print(
      "| tbf | workload | run | busy overhead us | idle tok/s | busy tok/s | measured tok/s | idle/measured | "
      "busy/measured |\n|---|---|---|---|---|---|---|---|---|\n");
  std::map<std::pair<std::string, std::string>, std::pair<Spread, Spread>> ratios;
  for (int run = 1; run <= runs; ++run) {
    for (const std::string& shaping : shapings) {
      const std::vector<Figures> figures = measure(run, shaping);
      for (std::size_t k = 0; k < kWorkloads.size(); ++k) {
        const Figures& f = figures[k];
        auto& [idle, busy] = ratios[{label(shaping), kWorkloads[k].label}];
        idle.v.push_back(f.idle / f.measured);
        busy.v.push_back(f.busy / f.measured);
        fmt::print("| {} | {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.3f} | {:.3f} |\n", label(shaping),
                   kWorkloads[k].label, run, f.overhead_us, f.idle, f.busy, f.measured, idle.v.back(), busy.v.back());
      }
    }
  }
  fmt::print("\n| tbf | workload | idle/measured, median (min-max) | busy/measured, median (min-max) |\n");
  fmt::print("|---|---|---|---|\n");
  for (auto& [key, r] : ratios)
    fmt::print("| {} | {} | {} | {} |\n", key.first, key.second, r.first.text(), r.second.text());
  return 0;
}
