#include <fmt/format.h>

#include <algorithm>

#include "hw/doctor/checks.hpp"

namespace hw::doctor {

namespace {

// A scheduler hiccup on a busy host adds tens of microseconds to a ping: not a cable's fault.
constexpr double kLatencyNoiseS = 100e-6;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

std::vector<Finding> check_probe(const ClusterFacts& f, const std::vector<PairFigures>& pairs,
                                 std::optional<double> card_gbps) {
  std::vector<Finding> out;
  if (pairs.empty()) return out;
  std::vector<double> bandwidths, latencies;
  for (const auto& p : pairs) {
    bandwidths.push_back(std::min(p.bandwidth_ab, p.bandwidth_ba));
    latencies.push_back(p.latency_s);
  }
  const double typical_bw = median(bandwidths), typical_lat = median(latencies);
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto& p = pairs[k];
    const std::string cable = f.name(p.a) + " - " + f.name(p.b);
    const std::string measured = fmt::format("{:.0f}/{:.0f} MB/s, {:.1f} us one way", p.bandwidth_ab / 1e6,
                                             p.bandwidth_ba / 1e6, p.latency_s * 1e6);
    std::string problem;
    if (bandwidths[k] < typical_bw / 2)
      problem = fmt::format("{}: under half the pairs' median of {:.0f} MB/s", measured, typical_bw / 1e6);
    else if (latencies[k] > 2 * typical_lat && latencies[k] - typical_lat > kLatencyNoiseS)
      problem = fmt::format("{}: over twice the pairs' median latency of {:.1f} us", measured, typical_lat * 1e6);
    else if (card_gbps && bandwidths[k] * 8 / 1e9 < *card_gbps / 2)
      problem = fmt::format("{}: under half the link card's {:g} Gb/s", measured, *card_gbps);
    if (problem.empty())
      out.push_back({"probe", cable, true, measured, ""});
    else
      out.push_back({"probe", cable, false, "an outlier: " + problem,
                     "check this cable's kind and seating (a Thunderbolt 4 cable in a Thunderbolt 5 mesh, a damaged "
                     "cable, a shaped or shared port) and probe again"});
  }
  return out;
}

}  // namespace hw::doctor
