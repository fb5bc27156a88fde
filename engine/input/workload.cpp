#include "engine/input/workload.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/base/portable_math.hpp"

namespace engine {

namespace {

// Hand-rolled draws from the raw engine, with portable log/exp/cos:
// std::*_distribution and libm differ between platforms, and reports must not.
double uniform01(std::mt19937_64& rng) { return (rng() >> 11) * 0x1.0p-53; }

double standard_normal(std::mt19937_64& rng) {
  const double u1 = std::max(uniform01(rng), 1e-300), u2 = uniform01(rng);
  return std::sqrt(-2 * portable::log(u1)) * portable::cos(2 * M_PI * u2);
}

int draw(const Distribution& d, std::mt19937_64& rng) {
  double v = d.value;
  if (d.kind == "uniform") {
    v = d.min + (d.max - d.min) * uniform01(rng);
  } else if (d.kind == "normal") {
    v = d.mean + d.stddev * standard_normal(rng);
  } else if (d.kind == "lognormal") {
    // Parameters of the underlying normal from the value's mean and stddev.
    const double sigma2 = portable::log(1 + (d.stddev * d.stddev) / (d.mean * d.mean));
    v = portable::exp(portable::log(d.mean) - sigma2 / 2 + std::sqrt(sigma2) * standard_normal(rng));
  }
  if (d.kind != "fixed") v = std::clamp(v, std::max(1.0, d.min), d.max > 0 ? d.max : 1e9);
  return std::max(1, static_cast<int>(std::lround(v)));
}

}  // namespace

std::vector<Request> make_requests(const Workload& w, std::uint64_t seed) {
  if (w.arrival == "trace")
    return {w.trace.begin(), w.trace.begin() + std::min<std::size_t>(w.requests, w.trace.size())};
  std::mt19937_64 rng(seed);
  std::vector<Request> out;
  double t = 0;
  for (int i = 0; i < w.requests; ++i) {
    Request r;
    r.id = i;
    r.prompt_tokens = draw(w.prompt_tokens, rng);
    r.output_tokens = draw(w.output_tokens, rng);
    if (w.arrival == "poisson") {
      t += -portable::log(1 - uniform01(rng)) / w.rate_per_s;
      r.arrival_s = t;
    } else if (i < w.concurrency) {
      r.arrival_s = 0;
    }
    out.push_back(r);
  }
  return out;
}

std::vector<std::vector<int>> make_prompt_ids(const std::vector<Request>& requests, int vocab, std::uint64_t seed) {
  std::vector<std::vector<int>> out(requests.size());
  for (const Request& r : requests) {
    std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ull * (r.id + 1)));  // each request its own stream
    for (int i = 0; i < r.prompt_tokens; ++i) out.at(r.id).push_back(static_cast<int>(uniform01(rng) * vocab));
  }
  return out;
}

}  // namespace engine
