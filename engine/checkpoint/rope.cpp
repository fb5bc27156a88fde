#include "engine/checkpoint/rope.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace engine {

namespace {

// inv[i] = θ^(-2i/d): the unscaled frequencies every type starts from.
std::vector<double> default_inv_freq(double theta, int dim) {
  std::vector<double> inv(dim / 2);
  for (int i = 0; i < dim / 2; ++i) inv[i] = 1.0 / std::pow(theta, 2.0 * i / dim);
  return inv;
}

// Llama 3.1: long wavelengths are divided by `factor`, short ones kept, and
// the band between blends the two by where the wavelength falls.
std::vector<double> llama3_inv_freq(const RopeScaling& r, int dim) {
  std::vector<double> inv = default_inv_freq(r.theta, dim);
  const double orig = r.original_max_position;
  const double low_wavelen = orig / r.low_freq_factor, high_wavelen = orig / r.high_freq_factor;
  for (double& f : inv) {
    const double wavelen = 2 * std::numbers::pi / f;
    const double scaled = wavelen > low_wavelen ? f / r.factor : f;
    const double smooth = (orig / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
    const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
    f = medium ? (1 - smooth) * scaled / r.factor + smooth * scaled : scaled;
  }
  return inv;
}

// YaRN: pairs that turn fewer than beta_slow times over the original context
// are interpolated (divided by factor), those past beta_fast extrapolated
// (kept), with a linear ramp between.
std::vector<double> yarn_inv_freq(const RopeScaling& r, int dim) {
  const std::vector<double> extrapolated = default_inv_freq(r.theta, dim);
  auto correction_dim = [&](double rotations) {
    return dim * std::log(r.original_max_position / (rotations * 2 * std::numbers::pi)) / (2 * std::log(r.theta));
  };
  double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
  if (r.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1.0);
  if (low == high) high += 0.001;  // no division by zero in the ramp
  std::vector<double> inv(dim / 2);
  for (int i = 0; i < dim / 2; ++i) {
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1 - ramp;
    inv[i] = extrapolated[i] / r.factor * (1 - extrapolation) + extrapolated[i] * extrapolation;
  }
  return inv;
}

// YaRN's get_mscale: 0.1·k·ln(s) + 1, or 1 when the context is not stretched.
double yarn_mscale(double scale, double k = 1.0) { return scale <= 1 ? 1.0 : 0.1 * k * std::log(scale) + 1.0; }

}  // namespace

std::vector<double> rope_inv_freq(const RopeScaling& r, int dim) {
  if (r.type == "llama3") return llama3_inv_freq(r, dim);
  if (r.type == "yarn") return yarn_inv_freq(r, dim);
  std::vector<double> inv = default_inv_freq(r.theta, dim);
  if (r.type == "linear")
    for (double& f : inv) f /= r.factor;
  return inv;
}

double rope_attention_factor(const RopeScaling& r) {
  if (r.type != "yarn") return 1.0;
  if (r.attention_factor) return *r.attention_factor;
  if (r.mscale != 0 && r.mscale_all_dim != 0)
    return yarn_mscale(r.factor, r.mscale) / yarn_mscale(r.factor, r.mscale_all_dim);
  return yarn_mscale(r.factor);
}

}  // namespace engine
