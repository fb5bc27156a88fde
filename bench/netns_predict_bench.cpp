// The simulator's decode-speed prediction against real processes on a shaped
// netns mesh, given the link card `meshinfer probe` measured on that mesh.
// Prints predicted, measured and their ratio for each run and each tbf shaping,
// then the median per shaping. The simulator models a link as a cable,
// latency + size / bandwidth. By default the mesh is shaped two ways: the
// token bucket of earlier runs (a 16 KB burst lets a 12 KB message through at
// once: real beats the prediction) and the cable of `launch --netns` (one frame
// of burst at a rate the machine's per-frame work keeps up with).
// See /work/tools/notes/issue-18.md. Needs root (network namespaces).
// Usage: netns_predict_bench [runs, default 5] [tbf shaping ("" unshaped) ...]
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/netns_mesh.hpp"
#include "support/cli_runner.hpp"
#include "support/real_run.hpp"

namespace {

using nlohmann::json;

constexpr int kWorld = 4;
const std::vector<std::string> kShapings = {"rate 200mbit burst 16kb latency 100ms", hw::cable_tbf(hw::kCableRateBps)};

std::string label(const std::string& shaping) { return shaping.empty() ? "unshaped" : shaping; }

double decode_speed(const std::string& report) {
  return json::parse(testsupport::read_file(report))["summary"]["decode_tokens_per_s"].get<double>();
}

void must(const testsupport::CliResult& r, const std::string& what) {
  if (r.exit_code != 0) throw std::runtime_error(what + " failed:\n" + r.output);
}

struct Figures {
  double gbps, latency_us, predicted, measured;
};

Figures measure(int run, const std::string& shaping) {
  hw::NetnsMesh mesh(kWorld, shaping);
  const std::string dir = testsupport::fresh_dir("netns-predict-" + std::to_string(run));
  const std::string cluster = testsupport::write_json(dir, "cluster", mesh.cluster(5000));
  const std::string prefix = " --exec-prefix '" + mesh.exec_prefix() + "'";
  const std::string card = dir + "/veth-probed.json";
  must(testsupport::run_cli("probe --cluster " + cluster + prefix + " --out " + card +
                            " --pings 30 --bytes 1000000 --repeats 2 --timeout 60"),
       "probe");
  const json probed = json::parse(testsupport::read_file(card));

  // A batch of 8 decodes: all-reduces of 48 KB, sent as 12 KB messages by a
  // two-shot all-reduce over 4 ranks.
  json s = testsupport::small_scenario("netns-predict", kWorld, 8, 16, "fail-stop", "veth-probed");
  s["workload"]["prompt_tokens"] = 4;
  s["workload"]["arrival"] = {{"type", "closed"}, {"concurrency", 8}};
  const std::string scenario = testsupport::write_json(dir, "s", s);
  must(testsupport::run_cli("launch " + scenario + " --hostfile " + cluster + prefix + " --out " + dir +
                            "/real --timeout 60 --card " + card),
       "launch");
  must(testsupport::run_cli("run --quiet " + scenario + " --card " + card + " --out " + dir + "/sim"), "run");
  return {probed["bandwidth_gbps"].get<double>(), probed["latency_us"].get<double>(),
          decode_speed(dir + "/sim/report.json"), decode_speed(dir + "/real/report.json")};
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::vector<std::string> shapings = argc > 2 ? std::vector<std::string>(argv + 2, argv + argc) : kShapings;
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty()) {
    fmt::print(stderr, "netns_predict_bench: {}\n", why);
    return 1;
  }
  fmt::print("Decode speed, {} ranks in network namespaces over veth shaped by tbf, batch 8 of 16 tokens,\n", kWorld);
  fmt::print("tb5 link card replaced by the one probed on this mesh; shapings take turns run by run\n\n");
  fmt::print(
      "| tbf | run | probed Gbit/s | probed latency us | predicted tok/s | measured tok/s | predicted/measured |\n");
  fmt::print("|---|---|---|---|---|---|---|\n");
  std::vector<std::vector<double>> ratios(shapings.size());
  for (int run = 1; run <= runs; ++run) {
    for (std::size_t k = 0; k < shapings.size(); ++k) {
      const Figures f = measure(run, shapings[k]);
      ratios[k].push_back(f.predicted / f.measured);
      fmt::print("| {} | {} | {:.3f} | {:.0f} | {:.1f} | {:.1f} | {:.3f} |\n", label(shapings[k]), run, f.gbps,
                 f.latency_us, f.predicted, f.measured, ratios[k].back());
    }
  }
  fmt::print("\n");
  for (std::size_t k = 0; k < shapings.size(); ++k) {
    auto& r = ratios[k];
    std::sort(r.begin(), r.end());
    fmt::print("{}: median predicted/measured {:.3f} (min {:.3f}, max {:.3f}) over {} runs\n", label(shapings[k]),
               r[r.size() / 2], r.front(), r.back(), r.size());
  }
  return 0;
}
