#include "core/scaled_number.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace matrixd {

ScaledNumber::ScaledNumber(std::complex<double> mantissa, int64_t exponent2)
    : mantissa_(mantissa), exponent2_(exponent2) {
  Normalize();
}

// Keeps max(|re|, |im|) in [0.5, 1): each product of two mantissas then stays within
// [0.25, 2) in magnitude per part, far from overflow and underflow.
void ScaledNumber::Normalize() {
  const double largest = std::max(std::abs(mantissa_.real()), std::abs(mantissa_.imag()));
  if (largest == 0.0) {
    mantissa_ = 0.0;
    exponent2_ = 0;
    return;
  }
  int shift = 0;
  std::frexp(largest, &shift);
  mantissa_ = {std::ldexp(mantissa_.real(), -shift), std::ldexp(mantissa_.imag(), -shift)};
  exponent2_ += shift;
}

ScaledNumber& ScaledNumber::operator*=(std::complex<double> factor) {
  return *this *= ScaledNumber(factor, 0);
}

ScaledNumber& ScaledNumber::operator*=(const ScaledNumber& other) {
  mantissa_ *= other.mantissa_;
  exponent2_ += other.exponent2_;
  Normalize();
  return *this;
}

ScaledNumber& ScaledNumber::operator/=(std::complex<double> divisor) {
  return *this /= ScaledNumber(divisor, 0);
}

ScaledNumber& ScaledNumber::operator/=(const ScaledNumber& other) {
  mantissa_ /= other.mantissa_;
  exponent2_ -= other.exponent2_;
  Normalize();
  return *this;
}

double ScaledNumber::log_abs() const {
  if (is_zero()) return -std::numeric_limits<double>::infinity();
  return std::log(std::abs(mantissa_)) + static_cast<double>(exponent2_) * std::numbers::ln2;
}

std::complex<double> ScaledNumber::phase() const {
  if (is_zero()) return 0.0;
  return mantissa_ / std::abs(mantissa_);
}

DecimalForm ScaledNumber::Decimal() const {
  if (is_zero()) return {};
  // log10|x| in long double: exponent2 * log10(2) keeps ~1e-13 of the fraction even for
  // exponents near 2^40.
  const long double log10_abs = std::log10(static_cast<long double>(std::abs(mantissa_))) +
                                static_cast<long double>(exponent2_) * 0.30102999566398119521L;
  int64_t exponent10 = static_cast<int64_t>(std::floor(log10_abs));
  double magnitude = static_cast<double>(std::pow(10.0L, log10_abs - exponent10));
  // Rounding can land exactly on 10 (or just under 1): renormalise.
  if (magnitude >= 10.0) {
    magnitude /= 10.0;
    ++exponent10;
  } else if (magnitude < 1.0) {
    magnitude *= 10.0;
    --exponent10;
  }
  return {phase() * magnitude, exponent10};
}

std::complex<double> ScaledNumber::ToComplex() const {
  // ldexp saturates to +-inf or 0 on its own once the exponent is clamped to int range.
  const int e = static_cast<int>(std::clamp<int64_t>(exponent2_, -100000, 100000));
  return {std::ldexp(mantissa_.real(), e), std::ldexp(mantissa_.imag(), e)};
}

}  // namespace matrixd
