// A real or complex number kept as mantissa * 2^exponent2 with an unbounded (int64) exponent, so
// that the product of many factors (pivots, diagonal entries) never overflows or underflows.
#ifndef MATRIXD_CORE_SCALED_NUMBER_H_
#define MATRIXD_CORE_SCALED_NUMBER_H_

#include <complex>
#include <cstdint>

namespace matrixd {

// det = mantissa * 10^exponent10 with 1 <= |mantissa| < 10, or mantissa 0 and exponent10 0.
struct DecimalForm {
  std::complex<double> mantissa;
  int64_t exponent10 = 0;
};

class ScaledNumber {
 public:
  // The number one.
  ScaledNumber() : mantissa_(1.0), exponent2_(0) {}
  static ScaledNumber Zero() { return ScaledNumber(0.0, 0); }
  // REQUIRES: value is finite.
  static ScaledNumber Of(std::complex<double> value) { return ScaledNumber(value, 0); }
  // mantissa * 2^exponent2, e.g. from the parts another process sent. REQUIRES: mantissa finite.
  static ScaledNumber FromParts(std::complex<double> mantissa, int64_t exponent2) {
    return ScaledNumber(mantissa, exponent2);
  }

  ScaledNumber& operator*=(std::complex<double> factor);
  ScaledNumber& operator*=(const ScaledNumber& other);
  // REQUIRES: divisor != 0.
  ScaledNumber& operator/=(std::complex<double> divisor);
  ScaledNumber& operator/=(const ScaledNumber& other);
  void Negate() { mantissa_ = -mantissa_; }

  bool is_zero() const { return mantissa_ == 0.0; }
  // Natural log of |x|; -inf for zero.
  double log_abs() const;
  // x / |x| (for a real number +1 or -1); 0 for zero.
  std::complex<double> phase() const;
  DecimalForm Decimal() const;
  // x as a plain complex double: +-inf or 0 when out of range.
  std::complex<double> ToComplex() const;

  // The normalised parts: x = mantissa() * 2^exponent2(), max(|re|, |im|) in [0.5, 1) or 0.
  std::complex<double> mantissa() const { return mantissa_; }
  int64_t exponent2() const { return exponent2_; }

 private:
  ScaledNumber(std::complex<double> mantissa, int64_t exponent2);
  void Normalize();

  std::complex<double> mantissa_;
  int64_t exponent2_;
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_SCALED_NUMBER_H_
