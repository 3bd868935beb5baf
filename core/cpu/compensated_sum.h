// Double-double accumulators: a running sum kept as an unevaluated pair hi + lo (|lo| <= ulp(hi)/2)
// updated with error-free transformations, so that summing many terms of mixed signs loses about
// 2^-106 relative to the largest partial sum instead of 2^-53 per addition.
// REQUIRES: IEEE double arithmetic, round to nearest, no -ffast-math (which would fold the
// compensation terms away).
#ifndef MATRIXD_CORE_CPU_COMPENSATED_SUM_H_
#define MATRIXD_CORE_CPU_COMPENSATED_SUM_H_

#include <complex>

namespace matrixd::cpu {

// s = fl(a + b) and e with s + e == a + b exactly, for any a, b (Knuth's TwoSum).
inline void TwoSum(double a, double b, double& s, double& e) {
  s = a + b;
  const double b_virtual = s - a;
  e = (a - (s - b_virtual)) + (b - b_virtual);
}

// As TwoSum, in three operations. REQUIRES: |a| >= |b| or a == 0 (Dekker's FastTwoSum).
inline void FastTwoSum(double a, double b, double& s, double& e) {
  s = a + b;
  e = b - (s - a);
}

// A real double-double sum.
class CompensatedSum {
 public:
  void Add(double x) { Add(x, 0.0); }
  // Adds the unevaluated sum hi + lo (such as a product carried in double-double).
  void Add(double hi, double lo) {
    double s, e;
    TwoSum(hi_, hi, s, e);
    e += lo_ + lo;
    FastTwoSum(s, e, hi_, lo_);
  }
  void Add(const CompensatedSum& other) { Add(other.hi_, other.lo_); }

  double hi() const { return hi_; }
  double lo() const { return lo_; }
  // The sum rounded to double.
  double value() const { return hi_ + lo_; }

 private:
  double hi_ = 0.0;
  double lo_ = 0.0;
};

// A complex double-double sum: each component compensated on its own.
class ComplexCompensatedSum {
 public:
  void Add(double re, double im) {
    re_.Add(re);
    im_.Add(im);
  }
  void Add(std::complex<double> x) { Add(x.real(), x.imag()); }
  void Add(const ComplexCompensatedSum& other) {
    re_.Add(other.re_);
    im_.Add(other.im_);
  }

  const CompensatedSum& real() const { return re_; }
  const CompensatedSum& imag() const { return im_; }
  std::complex<double> value() const { return {re_.value(), im_.value()}; }

 private:
  CompensatedSum re_;
  CompensatedSum im_;
};

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_COMPENSATED_SUM_H_
