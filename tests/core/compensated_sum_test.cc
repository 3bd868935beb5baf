// The double-double sums of the permanents (core/cpu/compensated_sum.h) against exact rational
// arithmetic (GMP): the error-free transformations are exact, and the sums are correctly rounded
// where plain summation loses everything.
#include "core/cpu/compensated_sum.h"

#include <gmp.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace matrixd::cpu {
namespace {

// An exact rational, freed on scope exit.
class Rational {
 public:
  Rational() { mpq_init(q_); }
  explicit Rational(double x) : Rational() { mpq_set_d(q_, x); }  // exact for any finite double
  ~Rational() { mpq_clear(q_); }
  Rational(const Rational&) = delete;
  Rational& operator=(const Rational&) = delete;

  Rational& operator+=(double x) {
    Rational term(x);
    mpq_add(q_, q_, term.q_);
    return *this;
  }
  bool operator==(const Rational& other) const { return mpq_equal(q_, other.q_) != 0; }
  // |this - x| / ulp(x): 0 when x is this value exactly.
  double UlpsFrom(double x) const {
    Rational difference(x);
    mpq_sub(difference.q_, q_, difference.q_);
    const double ulp = std::nextafter(std::fabs(x), INFINITY) - std::fabs(x);
    return std::fabs(mpq_get_d(difference.q_)) / ulp;
  }

 private:
  mpq_t q_;
};

// a + b exactly.
bool SumIsExact(double a, double b, double s, double e) {
  Rational want(a);
  want += b;
  Rational got(s);
  got += e;
  return want == got;
}

// Pairs of every relative size, signs and exponents, as the walks' sums produce them.
std::vector<std::pair<double, double>> Pairs() {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-60, 60);
  std::vector<std::pair<double, double>> pairs = {{1.0, 1e-17}, {1e16, 1.0}, {1.0, -1.0},
                                                  {0.0, 0.0},   {0.0, 3.0},  {-2.5, 0.0}};
  for (int i = 0; i < 5000; ++i) {
    pairs.emplace_back(std::ldexp(mantissa(rng), exponent(rng)),
                       std::ldexp(mantissa(rng), exponent(rng)));
  }
  return pairs;
}

TEST(TwoSum, SumPlusErrorIsExactInEitherOrder) {
  for (const auto& [a, b] : Pairs()) {
    double s, e;
    TwoSum(a, b, s, e);
    ASSERT_EQ(s, a + b);
    ASSERT_TRUE(SumIsExact(a, b, s, e)) << a << " + " << b;
    TwoSum(b, a, s, e);
    ASSERT_TRUE(SumIsExact(a, b, s, e)) << b << " + " << a;
  }
}

TEST(FastTwoSum, SumPlusErrorIsExactWhenTheFirstIsLarger) {
  for (auto [a, b] : Pairs()) {
    if (std::fabs(a) < std::fabs(b)) std::swap(a, b);
    double s, e;
    FastTwoSum(a, b, s, e);
    ASSERT_EQ(s, a + b);
    ASSERT_TRUE(SumIsExact(a, b, s, e)) << a << " + " << b;
  }
}

TEST(CompensatedSum, EmptySumIsZero) {
  const CompensatedSum sum;
  EXPECT_EQ(sum.hi(), 0.0);
  EXPECT_EQ(sum.lo(), 0.0);
  EXPECT_EQ(sum.value(), 0.0);
}

// 1e16 + 1 - 1e16: plain double summation gives 0.
TEST(CompensatedSum, KeepsWhatPlainSummationCancels) {
  CompensatedSum sum;
  for (const double x : {1e16, 1.0, -1e16}) sum.Add(x);
  EXPECT_EQ(sum.value(), 1.0);
  EXPECT_EQ((1e16 + 1.0) - 1e16, 0.0);  // the failure it avoids
}

// Many terms of mixed signs and magnitudes whose exact sum is tiny next to the partial sums: the
// result is the exact sum to within one rounding.
TEST(CompensatedSum, IllConditionedSumIsCorrectToOneUlp) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-30, 30);
  std::vector<double> terms;
  for (int i = 0; i < 10000; ++i) {
    const double x = std::ldexp(mantissa(rng), exponent(rng));
    terms.push_back(x);
    terms.push_back(-x * (1.0 - 0x1p-40));  // near-cancelling partner
  }
  CompensatedSum sum;
  double plain = 0.0;
  Rational exact;
  for (const double x : terms) {
    sum.Add(x);
    plain += x;
    exact += x;
  }
  EXPECT_LE(exact.UlpsFrom(sum.value()), 1.0);
  EXPECT_GT(exact.UlpsFrom(plain), 1e3);  // plain summation is far off on this input
}

TEST(CompensatedSum, LowPartStaysWithinHalfAnUlpOfTheHighPart) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> term(-1e6, 1e6);
  CompensatedSum sum;
  for (int i = 0; i < 10000; ++i) {
    sum.Add(term(rng));
    const double half_ulp =
        0.5 * (std::nextafter(std::fabs(sum.hi()), INFINITY) - std::fabs(sum.hi()));
    ASSERT_LE(std::fabs(sum.lo()), half_ulp);
  }
}

// A product carried as hi + lo (lo = the rounding error of hi = a b, from fma) sums exactly.
TEST(CompensatedSum, AddsAnUnevaluatedPairExactly) {
  const double a = 1.0 + 0x1p-30;
  const double b = 1.0 - 0x1p-30;
  const double hi = a * b;
  const double lo = std::fma(a, b, -hi);  // a b = 1 - 2^-60 exactly
  ASSERT_NE(lo, 0.0);
  CompensatedSum sum;
  sum.Add(hi, lo);
  sum.Add(-1.0);
  EXPECT_EQ(sum.value(), -0x1p-60);
}

TEST(CompensatedSum, AddingAnotherSumEqualsAddingItsTerms) {
  CompensatedSum left, right, all;
  for (const double x : {1e16, 3.0, -7.5}) {
    left.Add(x);
    all.Add(x);
  }
  for (const double x : {-1e16, 0.25, 0.5}) {
    right.Add(x);
    all.Add(x);
  }
  left.Add(right);
  EXPECT_EQ(all.value(), -3.75);
  EXPECT_EQ(left.value(), -3.75);
}

TEST(ComplexCompensatedSum, CompensatesEachComponentOnItsOwn) {
  ComplexCompensatedSum sum;
  sum.Add(std::complex<double>(1e16, -1.0));
  sum.Add(1.0, 1e16);
  sum.Add(std::complex<double>(-1e16, -1e16));
  EXPECT_EQ(sum.value(), std::complex<double>(1.0, -1.0));
  EXPECT_EQ(sum.real().value(), 1.0);
  EXPECT_EQ(sum.imag().value(), -1.0);
}

TEST(ComplexCompensatedSum, AddingAnotherSumMergesBothComponents) {
  ComplexCompensatedSum a, b;
  a.Add(1e16, 2.0);
  b.Add(-1e16 + 2.0, -2.0);
  a.Add(b);
  EXPECT_EQ(a.value(), std::complex<double>(2.0, 0.0));
}

}  // namespace
}  // namespace matrixd::cpu
