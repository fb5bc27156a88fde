#include "engine/base/portable_math.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace engine::portable {

namespace {

// ln 2 and pi/2 split so that k * hi is exact for the k met here (fdlibm's constants).
constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
constexpr double kPio2Hi = 1.57079632673412561417e+00, kPio2Lo = 6.07710050650619224932e-11;

// Taylor series in Horner form, each coefficient one exact division.
double sin_kernel(double r) {  // |r| <= pi/4
  const double r2 = r * r;
  double t = 1;
  for (int i = 12; i >= 1; --i) t = 1 - r2 / ((2.0 * i) * (2.0 * i + 1)) * t;
  return r * t;
}

double cos_kernel(double r) {  // |r| <= pi/4
  const double r2 = r * r;
  double t = 1;
  for (int i = 12; i >= 1; --i) t = 1 - r2 / ((2.0 * i - 1) * (2.0 * i)) * t;
  return t;
}

// x = q * pi/2 + r with |r| <= pi/4; returns q mod 4.
int reduce(double x, double& r) {
  const double q = std::floor(x * (2 / M_PI) + 0.5);
  r = (x - q * kPio2Hi) - q * kPio2Lo;
  return static_cast<int>(q - 4 * std::floor(q / 4));
}

}  // namespace

double exp(double x) {
  if (std::isnan(x)) return x;
  if (x > 709.8) return std::numeric_limits<double>::infinity();
  if (x < -745.2) return 0;
  const double k = std::floor(x / kLn2Hi + 0.5);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;  // |r| <= ln2 / 2
  double p = 1;
  for (int i = 18; i >= 1; --i) p = 1 + r * p / i;
  return std::ldexp(p, static_cast<int>(k));
}

double log(double x) {
  if (std::isnan(x) || x < 0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0) return -std::numeric_limits<double>::infinity();
  if (std::isinf(x)) return x;
  int e = 0;
  double m = std::frexp(x, &e);  // [0.5, 1)
  if (m < M_SQRT1_2) {
    m *= 2;
    --e;
  }
  // log m = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 ...), |s| <= 0.172
  const double s = (m - 1) / (m + 1), s2 = s * s;
  double t = 1.0 / 27;
  for (int k = 12; k >= 0; --k) t = 1.0 / (2 * k + 1) + s2 * t;
  return e * kLn2Hi + (e * kLn2Lo + 2 * s * t);
}

double sin(double x) {
  if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
  double r;
  switch (reduce(x, r)) {
    case 0:
      return sin_kernel(r);
    case 1:
      return cos_kernel(r);
    case 2:
      return -sin_kernel(r);
    default:
      return -cos_kernel(r);
  }
}

double cos(double x) {
  if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
  double r;
  switch (reduce(x, r)) {
    case 0:
      return cos_kernel(r);
    case 1:
      return -sin_kernel(r);
    case 2:
      return -cos_kernel(r);
    default:
      return sin_kernel(r);
  }
}

double powi(double x, int n) {
  double result = 1, base = n < 0 ? 1 / x : x;
  for (unsigned k = n < 0 ? -static_cast<unsigned>(n) : n; k > 0; k >>= 1, base *= base)
    if (k & 1) result *= base;
  return result;
}

std::optional<double> parse_decimal(std::string_view text) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i - from;
  };
  if (i < text.size() && text[i] == '-') ++i;
  std::size_t mantissa = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return std::nullopt;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) return std::nullopt;
  }
  if (i != text.size()) return std::nullopt;
  // strtod rounds correctly on glibc and macOS alike; the grammar above leaves it no
  // locale-dependent text (meshinfer never leaves the "C" locale).
  const double v = std::strtod(std::string(text).c_str(), nullptr);
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace engine::portable
