// exp, log, sin, cos and integer powers from +, -, *, / and ldexp/frexp only,
// all exactly rounded by IEEE 754: the same bits on every OS, compiler and CPU
// (with -ffp-contract=off), where each platform's libm differs in the last bit.
// For values that reach a report; within a few ulp of the true result.
#pragma once

#include <optional>
#include <string_view>

namespace engine::portable {

double exp(double x);
// REQUIRES: x > 0 (0 gives -inf, negative or NaN gives NaN).
double log(double x);
// Meant for |x| < 1e6, where the reduction by pi/2 keeps its accuracy.
double sin(double x);
double cos(double x);
// x to the n, by repeated squaring.
double powi(double x, int n);
// The number all of `text` spells, "[-]digits[.digits][(e|E)[+-]digits]" as
// std::from_chars reads it, correctly rounded; none when it spells none or
// overflows. libc++ before LLVM 20 (Apple's too) has no floating-point from_chars.
std::optional<double> parse_decimal(std::string_view text);

}  // namespace engine::portable
