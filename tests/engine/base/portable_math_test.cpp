// engine/base/portable_math: close to libm everywhere it is used, and exact where
// exactness is cheap (integer powers of small integers, exp(0), log(1)).
#include "engine/base/portable_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace {

namespace pm = engine::portable;

// |a - b| in units of b's last place.
double ulps(double a, double b) { return std::abs(a - b) / (std::nextafter(std::abs(b), INFINITY) - std::abs(b)); }
// Within 4 ulp, or 4e-16 absolute where the result is near zero (log near 1).
bool agrees(double a, double b) { return ulps(a, b) <= 4 || std::abs(a - b) <= 4e-16; }

TEST(PortableMath, ExpAndLogAreWithinAFewUlpOfLibm) {
  for (double x = -700; x < 700; x += 0.37) EXPECT_TRUE(agrees(pm::exp(x), std::exp(x))) << x;
  for (double x = 1e-300; x < 1e300; x *= 1.9) EXPECT_TRUE(agrees(pm::log(x), std::log(x))) << x;
  for (double x = 0.5; x < 2; x += 1e-3) EXPECT_TRUE(agrees(pm::log(x), std::log(x))) << x;
  EXPECT_EQ(pm::exp(0), 1);
  EXPECT_EQ(pm::log(1), 0);
  EXPECT_EQ(pm::log(0), -INFINITY);
  EXPECT_TRUE(std::isnan(pm::log(-1)));
  EXPECT_EQ(pm::exp(800), INFINITY);
  EXPECT_EQ(pm::exp(-800), 0);
}

TEST(PortableMath, SinAndCosAreWithinAFewUlpOfLibmForAnglesInUse) {
  for (double x = -1000; x < 1000; x += 0.0123) {
    EXPECT_TRUE(agrees(pm::sin(x), std::sin(x))) << x;
    EXPECT_TRUE(agrees(pm::cos(x), std::cos(x))) << x;
  }
  EXPECT_EQ(pm::sin(0), 0);
  EXPECT_EQ(pm::cos(0), 1);
}

TEST(PortableMath, IntegerPowersAreExactWhereTheResultIsRepresentable) {
  EXPECT_EQ(pm::powi(3, 20), 3486784401.0);
  EXPECT_EQ(pm::powi(2, -10), 1.0 / 1024);
  EXPECT_EQ(pm::powi(7, 0), 1);
  EXPECT_LE(ulps(pm::powi(0.96875, 500), std::pow(0.96875, 500)), 64);
}

// What std::from_chars reads, rounded as the compiler rounds the same literal.
TEST(PortableMath, ParseDecimalReadsWhatFromCharsReadsRoundedCorrectly) {
  EXPECT_EQ(pm::parse_decimal("0.1"), 0.1);
  EXPECT_EQ(pm::parse_decimal("-2.5E+3"), -2500);
  EXPECT_EQ(pm::parse_decimal("1700000000.6805901"), 1700000000.6805901);
  EXPECT_EQ(pm::parse_decimal(".5"), 0.5);
  EXPECT_EQ(pm::parse_decimal("7."), 7);
  EXPECT_EQ(pm::parse_decimal("4.9e-324"), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(pm::parse_decimal("2.2250738585072011e-308"), 2.2250738585072011e-308);  // a hard case for rounding
  for (const char* bad : {"", "-", ".", "1e", "1e+", "+1", " 1", "1 ", "inf", "nan", "0x1p3", "1e999", "1,5", "--1"})
    EXPECT_FALSE(pm::parse_decimal(bad)) << "'" << bad << "'";
}

}  // namespace
