// Determinants on every backend, against independent references: exact rationals (Hilbert),
// fraction-free Bareiss elimination over GMP integers, Leibniz expansion and partial-pivoting LU in
// long double (64-bit mantissa, exponent range to 10^4932).
#include <gmp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/matrix.h"
#include "core/modular_arithmetic.h"
#include "core/operations.h"
#include "core/scaled_number.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"
#include "tests/core/bareiss_reference.h"

namespace matrixd {
namespace {

using LongComplex = std::complex<long double>;
using testing::BareissDeterminant;
using testing::BareissResidue;
using testing::BigInt;

constexpr DeterminantMethod kMethods[] = {DeterminantMethod::kLu, DeterminantMethod::kCondensation};
constexpr uint64_t kPrimeNear2To62 = 4611686018427387847ULL;
constexpr double kEpsilon = std::numeric_limits<double>::epsilon();

const char* MethodName(DeterminantMethod method) {
  return method == DeterminantMethod::kLu ? "LU" : "CONDENSATION";
}

// ---- References ----

// Multiplies x by 2^e in steps that stay inside the double range.
void TimesPowerOfTwo(ScaledNumber& x, long e) {  // NOLINT(runtime/int): GMP's exponent type
  while (e != 0) {
    const long step = std::clamp(e, -1000L, 1000L);  // NOLINT(runtime/int)
    x *= std::ldexp(1.0, static_cast<int>(step));
    e -= step;
  }
}

ScaledNumber ToScaled(mpz_srcptr z) {
  long e = 0;  // NOLINT(runtime/int)
  ScaledNumber x = ScaledNumber::Of(mpz_get_d_2exp(&e, z));
  TimesPowerOfTwo(x, e);
  return x;
}

ScaledNumber ToScaled(LongComplex z) {
  const long double largest = std::max(std::fabs(z.real()), std::fabs(z.imag()));
  if (largest == 0.0L) return ScaledNumber::Zero();
  const int e = std::ilogb(largest);
  ScaledNumber x = ScaledNumber::Of({static_cast<double>(std::ldexp(z.real(), -e)),
                                     static_cast<double>(std::ldexp(z.imag(), -e))});
  TimesPowerOfTwo(x, e);
  return x;
}

// |computed / reference - 1|, without overflow for references far outside the double range.
double RelativeError(const ScaledNumber& computed, const ScaledNumber& reference) {
  ScaledNumber ratio = computed;
  ratio /= reference;
  return std::abs(ratio.ToComplex() - 1.0);
}

// det by the Leibniz formula, sum over all n! permutations, in long double. n <= 7.
template <typename T>
T LeibnizDeterminant(const std::vector<T>& a, int n) {
  std::vector<int> permutation(n);
  std::iota(permutation.begin(), permutation.end(), 0);
  T sum = 0;
  do {
    int inversions = 0;
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) inversions += permutation[i] > permutation[j];
    }
    T term = inversions % 2 == 0 ? T(1) : T(-1);
    for (int i = 0; i < n; ++i) term *= a[i * n + permutation[i]];
    sum += term;
  } while (std::next_permutation(permutation.begin(), permutation.end()));
  return sum;
}

// det by LU with partial pivoting in long double (or complex long double).
template <typename T>
T LongDoubleLuDeterminant(std::vector<T> a, int n) {
  T det = 1;
  for (int k = 0; k < n; ++k) {
    int pivot = k;
    for (int i = k + 1; i < n; ++i) {
      if (std::abs(a[i * n + k]) > std::abs(a[pivot * n + k])) pivot = i;
    }
    if (a[pivot * n + k] == T(0)) return 0;
    if (pivot != k) {
      for (int j = 0; j < n; ++j) std::swap(a[k * n + j], a[pivot * n + j]);
      det = -det;
    }
    det *= a[k * n + k];
    for (int i = k + 1; i < n; ++i) {
      const T factor = a[i * n + k] / a[k * n + k];
      for (int j = k + 1; j < n; ++j) a[i * n + j] -= factor * a[k * n + j];
    }
  }
  return det;
}

std::string BareissDecimal(const std::vector<int64_t>& entries, int n) {
  BigInt det;
  BareissDeterminant(entries, n, det);
  return det.Decimal();
}

// det of the n x n Hilbert matrix, exactly: c_n^4 / c_{2n} with c_n = prod_{i<n} i!.
ScaledNumber ExactHilbertDeterminant(int n) {
  const auto c = [](int m, BigInt& out) {
    BigInt factorial(1);
    mpz_set_ui(out.get(), 1);
    for (int i = 1; i < m; ++i) {
      mpz_mul_ui(factorial.get(), factorial.get(), i);
      mpz_mul(out.get(), out.get(), factorial.get());
    }
  };
  BigInt numerator, denominator;
  c(n, numerator);
  mpz_pow_ui(numerator.get(), numerator.get(), 4);
  c(2 * n, denominator);
  ScaledNumber det = ToScaled(numerator.get());
  det /= ToScaled(denominator.get());
  return det;
}

// ln det H_n from the closed form, via log-gamma in long double (for n far past GMP-friendly).
long double HilbertLogDeterminant(int n) {
  const auto log_c = [](int m) {
    long double sum = 0.0L;
    for (int i = 1; i < m; ++i) sum += std::lgamma(static_cast<long double>(i + 1));
    return sum;
  };
  return 4.0L * log_c(n) - log_c(2 * n);
}

// ---- Inputs ----

std::vector<double> Hilbert(int n) {
  std::vector<double> h(n * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) h[i * n + j] = 1.0 / (i + j + 1);
  }
  return h;
}

std::vector<double> RandomReal(int n, std::mt19937_64& rng, double scale = 1.0) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> a(n * n);
  for (double& x : a) x = scale * uniform(rng);
  return a;
}

std::vector<std::complex<double>> RandomComplex(int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<std::complex<double>> a(n * n);
  for (auto& z : a) z = {uniform(rng), uniform(rng)};
  return a;
}

std::vector<int64_t> RandomIntegers(int n, std::mt19937_64& rng, int64_t low, int64_t high) {
  std::uniform_int_distribution<int64_t> uniform(low, high);
  std::vector<int64_t> a(n * n);
  for (int64_t& x : a) x = uniform(rng);
  return a;
}

template <typename From, typename To>
std::vector<To> Converted(const std::vector<From>& values) {
  return std::vector<To>(values.begin(), values.end());
}

// ---- The suite ----

class DeterminantTest : public testing::BackendTest {
 public:
  DeterminantResult Run(const Matrix& m, DeterminantMethod method, uint64_t modulus = 0) {
    DeterminantOptions options;
    options.method = method;
    options.modulus = modulus;
    absl::StatusOr<DeterminantResult> result = backend().Determinant(m.view(), options, nullptr);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return {};
    return *std::move(result);
  }
  template <typename T>
  DeterminantResult Run(int n, const std::vector<T>& values, DeterminantMethod method,
                        uint64_t modulus = 0) {
    return Run(Matrix::FromValues<T>(n, n, values), method, modulus);
  }
};

TEST_P(DeterminantTest, HilbertUpToEightMatchesExactRational) {
  // 2-norm condition numbers of H_n: the relative error of a backward-stable determinant is at
  // most about cond * eps (and so is the error from rounding 1/(i+j+1) to double).
  const double condition[] = {1, 1, 19.3, 524, 1.55e4, 4.77e5, 1.50e7, 4.75e8, 1.53e10};
  for (DeterminantMethod method : kMethods) {
    for (int n = 1; n <= 8; ++n) {
      SCOPED_TRACE(::testing::Message() << MethodName(method) << " n=" << n);
      const DeterminantResult result = Run(n, Hilbert(n), method);
      EXPECT_LE(RelativeError(result.value, ExactHilbertDeterminant(n)),
                std::max(16 * kEpsilon, condition[n] * kEpsilon));
      EXPECT_EQ(result.method_used, method);
    }
  }
}

TEST_P(DeterminantTest, HilbertNineToTwelveHasRightSignAndMagnitude) {
  for (DeterminantMethod method : kMethods) {
    for (int n = 9; n <= 12; ++n) {
      SCOPED_TRACE(::testing::Message() << MethodName(method) << " n=" << n);
      const DeterminantResult result = Run(n, Hilbert(n), method);
      const ScaledNumber exact = ExactHilbertDeterminant(n);
      EXPECT_EQ(result.value.phase(), std::complex<double>(1.0));
      // Within a factor 3 (n = 12 has condition number 1.7e16, one unit roundoff away from
      // singular); for n <= 10 within 1%.
      const double log_ratio = result.value.log_abs() - exact.log_abs();
      EXPECT_LT(std::abs(log_ratio), n <= 10 ? 0.01 : std::log(3.0));
      EXPECT_EQ(result.value.Decimal().exponent10 - exact.Decimal().exponent10, 0)
          << "computed " << result.value.Decimal().mantissa << "e"
          << result.value.Decimal().exponent10;
    }
  }
}

TEST_P(DeterminantTest, HilbertEightHundredIsTinyButNonZero) {
  // det H_800 = 10^-384680.8 exactly (the seed paper's table, ~10^-5853, is off). In double the
  // matrix is numerically singular, so only the shape of the answer can be asked for: a finite,
  // tiny, non-zero determinant (no underflow to zero, no overflow) that is no smaller than the
  // true one.
  const double exact_log = static_cast<double>(HilbertLogDeterminant(800));
  ASSERT_NEAR(exact_log / std::log(10.0), -384680.8, 0.1);
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    const DeterminantResult result = Run(800, Hilbert(800), method);
    EXPECT_FALSE(result.value.is_zero());
    EXPECT_TRUE(std::isfinite(result.value.log_abs()));
    EXPECT_LT(result.value.log_abs(), -1000.0);
    EXPECT_GT(result.value.log_abs(), exact_log);
  }
}

TEST_P(DeterminantTest, RandomRealMatchesLeibnizExpansion) {
  std::mt19937_64 rng(11);
  for (DeterminantMethod method : kMethods) {
    for (int n = 1; n <= 6; ++n) {
      for (int trial = 0; trial < 5; ++trial) {
        SCOPED_TRACE(::testing::Message() << MethodName(method) << " n=" << n << " #" << trial);
        const std::vector<double> a = RandomReal(n, rng);
        const long double reference = LeibnizDeterminant(Converted<double, long double>(a), n);
        const DeterminantResult result = Run(n, a, method);
        // Absolute error against the scale of the products (entries are at most 1).
        EXPECT_NEAR(result.value.ToComplex().real(), static_cast<double>(reference), 1e-13);
        EXPECT_EQ(result.value.ToComplex().imag(), 0.0);
      }
    }
  }
}

TEST_P(DeterminantTest, Float32InputIsComputedInDouble) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    const int n = 6;
    std::vector<float> a(n * n);
    for (float& x : a) x = uniform(rng);
    const long double reference = LeibnizDeterminant(Converted<float, long double>(a), n);
    const DeterminantResult result = Run(n, a, method);
    // A float computation would be off by ~1e-6; double is ~1e-15.
    EXPECT_NEAR(result.value.ToComplex().real(), static_cast<double>(reference), 1e-13);
  }
}

TEST_P(DeterminantTest, LuAndCondensationAgreeOnRandomMatrices) {
  std::mt19937_64 rng(13);
  for (int n : {20, 100, 300}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const std::vector<double> a = RandomReal(n, rng);
    const DeterminantResult lu = Run(n, a, DeterminantMethod::kLu);
    const DeterminantResult condensation = Run(n, a, DeterminantMethod::kCondensation);
    const std::vector<long double> wide = Converted<double, long double>(a);
    const ScaledNumber reference = ToScaled(LongDoubleLuDeterminant(wide, n));
    EXPECT_LT(RelativeError(lu.value, reference), 1e-10);
    EXPECT_LT(RelativeError(condensation.value, reference), 1e-8);
  }
}

TEST_P(DeterminantTest, AutoPicksLuForFloatingInput) {
  const DeterminantResult result =
      Run(2, std::vector<double>{1, 2, 3, 4}, DeterminantMethod::kAuto);
  EXPECT_EQ(result.method_used, DeterminantMethod::kLu);
  EXPECT_EQ(result.value.ToComplex(), std::complex<double>(-2.0));
}

TEST_P(DeterminantTest, SwapMatrixIsMinusOne) {
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    const DeterminantResult result = Run(2, std::vector<double>{0, 1, 1, 0}, method);
    EXPECT_EQ(result.value.ToComplex(), std::complex<double>(-1.0));
    EXPECT_EQ(result.value.Decimal().exponent10, 0);
    EXPECT_EQ(result.value.Decimal().mantissa, std::complex<double>(-1.0));
  }
}

TEST_P(DeterminantTest, LeadingZerosInFirstRowAreHandled) {
  // det = 0 (50 - 48) - 2 (40 - 42) + 3 (32 - 35) = -5.
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    const DeterminantResult result =
        Run(3, std::vector<double>{0, 2, 3, 4, 5, 6, 7, 8, 10}, method);
    EXPECT_NEAR(result.value.ToComplex().real(), -5.0, 1e-13);
  }
  // Larger: the first row's first half zero, the rest random; zeros also on the diagonal.
  std::mt19937_64 rng(14);
  const int n = 6;
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<double> a = RandomReal(n, rng);
    for (int j = 0; j < 3; ++j) a[j] = 0.0;
    for (int i = 0; i < n; ++i) a[i * n + i] = 0.0;
    const long double reference = LeibnizDeterminant(Converted<double, long double>(a), n);
    for (DeterminantMethod method : kMethods) {
      SCOPED_TRACE(::testing::Message() << MethodName(method) << " #" << trial);
      EXPECT_NEAR(Run(n, a, method).value.ToComplex().real(), static_cast<double>(reference),
                  1e-13);
    }
  }
}

TEST_P(DeterminantTest, ClosestToOnePivotLeftOfOtherNonZerosIsHandled) {
  // The first row's entry closest to 1 sits right of non-zero entries, so condensation's
  // columns left of the pivot must keep their a_{0,j} terms.
  const std::vector<double> a = {5, -3, 1, 2, 2, 7, 1, 4, 3, 1, 8, -6, 4, 4, 2, 9};
  const long double reference = LeibnizDeterminant(Converted<double, long double>(a), 4);
  ASSERT_NE(reference, 0.0L);
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    EXPECT_NEAR(Run(4, a, method).value.ToComplex().real(), static_cast<double>(reference), 1e-12);
  }
}

TEST_P(DeterminantTest, ZeroRowGivesExactlyZero) {
  std::mt19937_64 rng(15);
  for (int zero_row : {0, 3, 7}) {
    std::vector<double> a = RandomReal(8, rng);
    for (int j = 0; j < 8; ++j) a[zero_row * 8 + j] = 0.0;
    for (DeterminantMethod method : kMethods) {
      SCOPED_TRACE(::testing::Message() << MethodName(method) << " zero row " << zero_row);
      const DeterminantResult result = Run(8, a, method);
      EXPECT_TRUE(result.value.is_zero()) << result.value.ToComplex();
      EXPECT_EQ(result.value.log_abs(), -std::numeric_limits<double>::infinity());
    }
  }
}

TEST_P(DeterminantTest, DuplicateRowsGiveZeroOrRoundoff) {
  std::mt19937_64 rng(16);
  std::vector<double> a = RandomReal(10, rng);
  for (int j = 0; j < 10; ++j) a[6 * 10 + j] = a[2 * 10 + j];
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    // Entries are at most 1, so any non-singular 10x10 determinant of this kind is ~1e-1;
    // roundoff may leave ~1e-16.
    EXPECT_LT(std::abs(Run(10, a, method).value.ToComplex()), 1e-14);
  }
}

TEST_P(DeterminantTest, OneByOneIsTheEntry) {
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    EXPECT_EQ(Run(1, std::vector<double>{-3.5e-300}, method).value.ToComplex(),
              std::complex<double>(-3.5e-300));
    const DeterminantResult z = Run(1, std::vector<std::complex<double>>{{0.0, 2.0}}, method);
    EXPECT_EQ(z.value.ToComplex(), std::complex<double>(0.0, 2.0));
    EXPECT_TRUE(Run(1, std::vector<double>{0.0}, method).value.is_zero());
  }
}

// Entries scale * U(-1, 1), n = 10: det ~ scale^10, far outside the double range.
void ExpectExtremeMagnitude(DeterminantTest& test, double scale, int64_t expected_exponent10) {
  std::mt19937_64 rng(17);
  const int n = 10;
  const std::vector<double> a = RandomReal(n, rng, scale);
  const ScaledNumber reference =
      ToScaled(LongDoubleLuDeterminant(Converted<double, long double>(a), n));
  ASSERT_NEAR(reference.Decimal().exponent10, expected_exponent10, 3);
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    const DeterminantResult result = test.Run(n, a, method);
    EXPECT_LT(RelativeError(result.value, reference), 1e-10);
    const DecimalForm decimal = result.value.Decimal();
    const DecimalForm expected = reference.Decimal();
    EXPECT_EQ(decimal.exponent10, expected.exponent10);
    EXPECT_NEAR(decimal.mantissa.real(), expected.mantissa.real(), 1e-9);
    EXPECT_EQ(decimal.mantissa.imag(), 0.0);
    EXPECT_NEAR(result.value.log_abs(), reference.log_abs(), 1e-9 * std::abs(reference.log_abs()));
  }
}

TEST_P(DeterminantTest, HugeEntriesKeepTheirExponent) {
  ExpectExtremeMagnitude(*this, 1e200, 2000);
}

TEST_P(DeterminantTest, TinyEntriesKeepTheirExponent) {
  ExpectExtremeMagnitude(*this, 1e-200, -2000);
}

TEST_P(DeterminantTest, RowsOfWildlyDifferentMagnitudes) {
  // Row i scaled by 10^(+-300): the determinant is 10^0 times the unscaled one, but products of
  // two rows' entries alone leave the double range.
  std::mt19937_64 rng(18);
  const int n = 6;
  std::vector<double> a = RandomReal(n, rng);
  const long double reference = LeibnizDeterminant(Converted<double, long double>(a), n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) a[i * n + j] *= i % 2 == 0 ? 1e300 : 1e-300;
  }
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    // 10^300 and 10^-300 are inexact in binary, so allow a few units of roundoff per row.
    EXPECT_LT(RelativeError(Run(n, a, method).value, ToScaled(LongComplex(reference))), 1e-12);
  }
}

TEST_P(DeterminantTest, DiagonalFarBeyondDoubleRange) {
  std::vector<double> a(20 * 20, 0.0);
  for (int i = 0; i < 20; ++i) a[i * 20 + i] = i == 7 ? -1e300 : 1e300;
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    const DecimalForm decimal = Run(20, a, method).value.Decimal();
    EXPECT_EQ(decimal.exponent10, 6000);
    EXPECT_NEAR(decimal.mantissa.real(), -1.0, 1e-13);
  }
}

TEST_P(DeterminantTest, ComplexMatchesLeibnizExpansion) {
  std::mt19937_64 rng(19);
  for (DeterminantMethod method : kMethods) {
    for (int n = 1; n <= 6; ++n) {
      SCOPED_TRACE(::testing::Message() << MethodName(method) << " n=" << n);
      const std::vector<std::complex<double>> a = RandomComplex(n, rng);
      const LongComplex reference =
          LeibnizDeterminant(Converted<std::complex<double>, LongComplex>(a), n);
      const std::complex<double> computed = Run(n, a, method).value.ToComplex();
      EXPECT_NEAR(computed.real(), static_cast<double>(reference.real()), 1e-13);
      EXPECT_NEAR(computed.imag(), static_cast<double>(reference.imag()), 1e-13);
      // complex64 input, the same values rounded to float.
      const std::vector<std::complex<float>> narrow =
          Converted<std::complex<double>, std::complex<float>>(a);
      const LongComplex narrow_reference =
          LeibnizDeterminant(Converted<std::complex<float>, LongComplex>(narrow), n);
      const std::complex<double> narrow_computed = Run(n, narrow, method).value.ToComplex();
      EXPECT_NEAR(narrow_computed.real(), static_cast<double>(narrow_reference.real()), 1e-13);
      EXPECT_NEAR(narrow_computed.imag(), static_cast<double>(narrow_reference.imag()), 1e-13);
    }
  }
}

TEST_P(DeterminantTest, ComplexLuAndCondensationMatchLongDouble) {
  std::mt19937_64 rng(20);
  const int n = 120;
  const std::vector<std::complex<double>> a = RandomComplex(n, rng);
  const ScaledNumber reference =
      ToScaled(LongDoubleLuDeterminant(Converted<std::complex<double>, LongComplex>(a), n));
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    EXPECT_LT(RelativeError(Run(n, a, method).value, reference), 1e-9);
  }
}

// ---- Over Z/p ----

TEST_P(DeterminantTest, ModularMatchesBareissResidues) {
  std::mt19937_64 rng(21);
  ASSERT_TRUE(IsPrime(kPrimeNear2To62));
  for (uint64_t p : {uint64_t{7}, uint64_t{65521}, kPrimeNear2To62}) {
    // 40: the CPU backend's blocked LU.
    for (int n : {1, 2, 3, 5, 8, 13, 40}) {
      // Small entries of both signs, and full-range 64-bit entries.
      for (int64_t bound : {int64_t{9}, std::numeric_limits<int64_t>::max()}) {
        const std::vector<int64_t> a = RandomIntegers(n, rng, -bound, bound);
        const uint64_t expected = BareissResidue(a, n, p);
        for (DeterminantMethod method : kMethods) {
          SCOPED_TRACE(::testing::Message()
                       << MethodName(method) << " p=" << p << " n=" << n << " bound=" << bound);
          const DeterminantResult result = Run(n, a, method, p);
          EXPECT_EQ(result.residue, expected);
          EXPECT_EQ(result.method_used, method);
          EXPECT_TRUE(result.value.is_zero());
        }
      }
    }
  }
}

TEST_P(DeterminantTest, ModularAutoPicksElimination) {
  const DeterminantResult result =
      Run(2, std::vector<int64_t>{1, 2, 3, 4}, DeterminantMethod::kAuto, 65521);
  EXPECT_EQ(result.method_used, DeterminantMethod::kLu);
  EXPECT_EQ(result.residue, 65521u - 2u);
}

TEST_P(DeterminantTest, ModularSingularGivesZeroResidue) {
  std::mt19937_64 rng(22);
  // Duplicate rows and a zero row: singular over Z.
  std::vector<int64_t> duplicate = RandomIntegers(7, rng, -1000, 1000);
  for (int j = 0; j < 7; ++j) duplicate[5 * 7 + j] = duplicate[1 * 7 + j];
  std::vector<int64_t> zero_row = RandomIntegers(7, rng, -1000, 1000);
  for (int j = 0; j < 7; ++j) zero_row[3 * 7 + j] = 0;
  // det = 2 * 7 = 14: singular mod 7 only.
  const std::vector<int64_t> fourteen = {2, 0, 0, 7};
  // Entries that are all multiples of 65521 in the first column: zero pivots everywhere.
  const std::vector<int64_t> multiples = {65521, 1, 2, -131042, 3, 4, 0, 5, 7};
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    for (uint64_t p : {uint64_t{7}, kPrimeNear2To62}) {
      EXPECT_EQ(Run(7, duplicate, method, p).residue, 0u);
      EXPECT_EQ(Run(7, zero_row, method, p).residue, 0u);
    }
    EXPECT_EQ(Run(2, fourteen, method, 7).residue, 0u);
    EXPECT_EQ(Run(2, fourteen, method, 65521).residue, 14u);
    EXPECT_EQ(Run(3, multiples, method, 65521).residue, 0u);
  }
}

TEST_P(DeterminantTest, ModularZeroPivotsAreSkipped) {
  // Mod 7 the first row is (0, 0, 3) and the (0,0) minor pattern forces swaps.
  const std::vector<int64_t> a = {7, -14, 3, 1, 5, 6, 2, 8, 9};
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    EXPECT_EQ(Run(3, a, method, 7).residue, BareissResidue(a, 3, 7));
    EXPECT_EQ(Run(2, std::vector<int64_t>{0, 1, 1, 0}, method, 7).residue, 6u);
  }
}

TEST_P(DeterminantTest, ModularOneByOneReducesNegatives) {
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    EXPECT_EQ(Run(1, std::vector<int64_t>{-5}, method, 7).residue, 2u);
    EXPECT_EQ(
        Run(1, std::vector<int64_t>{std::numeric_limits<int64_t>::min()}, method, kPrimeNear2To62)
            .residue,
        BareissResidue({std::numeric_limits<int64_t>::min()}, 1, kPrimeNear2To62));
  }
}

// ---- Exact integer determinants ----

TEST_P(DeterminantTest, ExactMatchesBareissForSmallEntries) {
  std::mt19937_64 rng(23);
  for (int n = 1; n <= 20; ++n) {
    std::vector<int64_t> a = RandomIntegers(n, rng, -100, 100);
    if (n % 2 == 0) a[0] = 0;  // forces a row swap in elimination (a sign to track)
    const std::string expected = BareissDecimal(a, n);
    for (DeterminantMethod method : kMethods) {
      SCOPED_TRACE(::testing::Message() << MethodName(method) << " n=" << n);
      const DeterminantResult result = Run(n, a, method);
      EXPECT_EQ(result.exact, expected);
      BigInt exact;
      mpz_set_str(exact.get(), expected.c_str(), 10);
      EXPECT_LT(RelativeError(result.value, ToScaled(exact.get())), 1e-12);
    }
  }
}

TEST_P(DeterminantTest, ExactHandlesEntriesNearInt64Limits) {
  std::mt19937_64 rng(24);
  const int64_t big = int64_t{1} << 62;
  for (int n = 1; n <= 6; ++n) {
    std::vector<int64_t> a = RandomIntegers(n, rng, big - 1000, big + 1000);
    for (size_t i = 0; i < a.size(); i += 2) a[i] = -a[i];
    a[0] = std::numeric_limits<int64_t>::min();
    a.back() = std::numeric_limits<int64_t>::max();
    const std::string expected = BareissDecimal(a, n);
    for (DeterminantMethod method : kMethods) {
      SCOPED_TRACE(::testing::Message() << MethodName(method) << " n=" << n);
      EXPECT_EQ(Run(n, a, method).exact, expected);
    }
  }
}

TEST_P(DeterminantTest, ExactOneByOne) {
  for (int64_t v : {int64_t{0}, int64_t{-7}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    SCOPED_TRACE(v);
    const DeterminantResult result = Run(1, std::vector<int64_t>{v}, DeterminantMethod::kAuto);
    EXPECT_EQ(result.exact, BigInt(v).Decimal());
    EXPECT_EQ(result.value.ToComplex(), std::complex<double>(static_cast<double>(v)));
  }
}

TEST_P(DeterminantTest, ExactSingularIntegerMatrixIsZero) {
  std::mt19937_64 rng(25);
  std::vector<int64_t> a = RandomIntegers(12, rng, -50, 50);
  for (int j = 0; j < 12; ++j) a[9 * 12 + j] = a[4 * 12 + j];
  std::vector<int64_t> zero_row = RandomIntegers(12, rng, -50, 50);
  for (int j = 0; j < 12; ++j) zero_row[11 * 12 + j] = 0;
  for (DeterminantMethod method : kMethods) {
    SCOPED_TRACE(MethodName(method));
    for (const auto& m : {a, zero_row}) {
      const DeterminantResult result = Run(12, m, method);
      EXPECT_EQ(result.exact, "0");
      EXPECT_TRUE(result.value.is_zero());
    }
  }
}

TEST_P(DeterminantTest, ExactIsLeftEmptyWhenTooExpensive) {
  // CPU: rows of norm 2^40: Hadamard's bound needs 400 * 40 bits, about 263 primes of 62 bits,
  // and 263 * 400^3 > cpu::kExactDeterminantBudget (1e10). CUDA, with a budget of its own
  // (cuda::kCudaExactDeterminantBudget = 1e14 over 24-bit primes): rows of norm 2^62 at n = 3000
  // need about 8088 primes, and 8088 * 3000^3 > 1e14. Only the floating-point value comes back.
  const bool cuda = GetParam() == "cuda";
  const int n = cuda ? 3000 : 400;
  const int bits = cuda ? 62 : 40;
  const int64_t big = int64_t{1} << bits;
  std::vector<int64_t> a(static_cast<size_t>(n) * n, 0);
  for (int i = 0; i < n; ++i) a[static_cast<size_t>(i) * n + i] = i == 0 ? -big : big;
  const DeterminantResult result = Run(n, a, DeterminantMethod::kLu);
  EXPECT_TRUE(result.exact.empty());
  // det = -2^(n bits).
  const double log2_det = static_cast<double>(n) * bits;
  EXPECT_NEAR(result.value.log_abs(), log2_det * std::log(2.0), 1e-9 * log2_det);
  EXPECT_EQ(result.value.phase(), std::complex<double>(-1.0));
}

// ---- Contract ----

// ---- Accuracy: the error bound against exact determinants of the very matrices given ----

// H_n times lcm(1, ..., 2n - 1): integers (below 2^53 for n <= 12), so that the double matrix is
// exactly the integer one and Bareiss gives its exact determinant.
std::vector<int64_t> IntegerHilbert(int n) {
  int64_t lcm = 1;
  for (int64_t k = 2; k < 2 * n; ++k) lcm = std::lcm(lcm, k);
  std::vector<int64_t> h(n * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) h[i * n + j] = lcm / (i + j + 1);
  }
  return h;
}

// H diag(d) H^T with H the n x n Sylvester-Hadamard matrix (H H^T = n I, n a power of two) and d
// random signs times 10^0 ... 10^decades spread over the diagonal in random order: singular values
// exactly n |d_i|, so kappa_2 = 10^decades whatever rows or columns are scaled. Integer entries,
// below 2^53 for n 10^decades < 2^53.
std::vector<int64_t> GradedSingularValues(int n, int decades, std::mt19937_64& rng) {
  std::vector<int64_t> d(n);
  for (int i = 0; i < n; ++i) {
    int64_t power = 1;
    for (int k = 0; k < (n == 1 ? 0 : i * decades / (n - 1)); ++k) power *= 10;
    d[i] = rng() % 2 == 0 ? power : -power;
  }
  std::shuffle(d.begin(), d.end(), rng);
  const auto hadamard = [](int i, int j) { return std::popcount(unsigned(i & j)) % 2 ? -1 : 1; };
  std::vector<int64_t> a(n * n, 0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < n; ++k) a[i * n + j] += hadamard(i, k) * d[k] * hadamard(j, k);
    }
  }
  return a;
}

// The LU determinant of `integers` read as doubles, checked against their exact determinant: the
// reported bound must cover the actual error. Returns the result for further checks.
DeterminantResult ExpectBoundHolds(DeterminantTest& test, int n,
                                   const std::vector<int64_t>& integers) {
  const DeterminantResult result =
      test.Run(n, Converted<int64_t, double>(integers), DeterminantMethod::kLu);
  EXPECT_TRUE(result.accuracy.has_value());
  if (!result.accuracy.has_value()) return result;
  BigInt exact;
  BareissDeterminant(integers, n, exact);
  const double error = RelativeError(result.value, ToScaled(exact.get()));
  const Accuracy& accuracy = *result.accuracy;
  EXPECT_GT(accuracy.rcond, 0.0);
  EXPECT_LE(accuracy.rcond, 1.0);
  EXPECT_LE(error, accuracy.relative_error_bound) << "rcond " << accuracy.rcond;
  EXPECT_LE(accuracy.meaningful_digits, -std::log10(error) + 1e-9);
  return result;
}

TEST_P(DeterminantTest, ErrorBoundHoldsOnHilbertMatrices) {
  for (int n = 2; n <= 12; ++n) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const DeterminantResult result = ExpectBoundHolds(*this, n, IntegerHilbert(n));
    if (!result.accuracy.has_value()) continue;
    // kappa(H_4) ~ 1.6e4: well conditioned; kappa(H_9) ~ 5e11: under 8 of 16 digits left.
    if (n <= 4) {
      EXPECT_FALSE(result.accuracy->ill_conditioned);
      EXPECT_GE(result.accuracy->meaningful_digits, 10.0);
    }
    if (n >= 9) {
      EXPECT_TRUE(result.accuracy->ill_conditioned);
    }
  }
}

TEST_P(DeterminantTest, ErrorBoundHoldsOnGradedSingularValues) {
  std::mt19937_64 rng(15);
  for (int n : {2, 4, 8, 16}) {
    for (int decades = 0; decades <= 13; ++decades) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " decades " << decades);
      const DeterminantResult result =
          ExpectBoundHolds(*this, n, GradedSingularValues(n, decades, rng));
      if (!result.accuracy.has_value()) continue;
      // kappa_inf is within a factor n of kappa_2 = 10^decades (and so is ?gecon's estimate,
      // within a further factor 3 in practice).
      EXPECT_LE(result.accuracy->rcond, 3.0 * n * std::pow(10.0, -decades));
      EXPECT_GE(result.accuracy->rcond, std::pow(10.0, -decades) / (3.0 * n));
      if (decades <= 4) {
        EXPECT_FALSE(result.accuracy->ill_conditioned);
      }
      if (decades >= 11) {
        EXPECT_TRUE(result.accuracy->ill_conditioned);
      }
    }
  }
}

TEST_P(DeterminantTest, SingularMatrixHasZeroRcondAndNoMeaningfulDigits) {
  const DeterminantResult result =
      Run(3, std::vector<double>{1, 2, 3, 0, 0, 0, 4, 5, 6}, DeterminantMethod::kLu);
  ASSERT_TRUE(result.accuracy.has_value());
  EXPECT_EQ(result.accuracy->rcond, 0.0);
  EXPECT_TRUE(std::isinf(result.accuracy->relative_error_bound));
  EXPECT_EQ(result.accuracy->meaningful_digits, 0.0);
  EXPECT_TRUE(result.accuracy->ill_conditioned);
}

TEST_P(DeterminantTest, CondensationAndModularReportNoAccuracy) {
  const Matrix a = Matrix::FromValues<int64_t>(2, 2, std::vector<int64_t>{1, 2, 3, 4});
  EXPECT_FALSE(Run(a, DeterminantMethod::kCondensation).accuracy.has_value());
  EXPECT_FALSE(Run(a, DeterminantMethod::kLu, 7).accuracy.has_value());
}

TEST_P(DeterminantTest, CancelledJobReturnsCancelled) {
  const Matrix real = Matrix::FromValues<double>(2, 2, std::vector<double>{1, 2, 3, 4});
  const Matrix integer = Matrix::FromValues<int64_t>(2, 2, std::vector<int64_t>{1, 2, 3, 4});
  for (DeterminantMethod method : kMethods) {
    for (uint64_t modulus : {uint64_t{0}, uint64_t{7}}) {
      for (const Matrix* m : {&real, &integer}) {
        if (modulus > 0 && m == &real) continue;
        SCOPED_TRACE(::testing::Message() << MethodName(method) << " modulus " << modulus);
        JobControl control;
        control.Cancel();
        DeterminantOptions options;
        options.method = method;
        options.modulus = modulus;
        EXPECT_EQ(backend().Determinant(m->view(), options, &control).status().code(),
                  absl::StatusCode::kCancelled);
      }
    }
  }
}

TEST_P(DeterminantTest, ProgressReachesOneAndStatsAreFilled) {
  std::mt19937_64 rng(26);
  const int n = 64;
  const Matrix a = Matrix::FromValues<double>(n, n, RandomReal(n, rng));
  const Matrix b = Matrix::FromValues<int64_t>(n, n, RandomIntegers(n, rng, -9, 9));
  const double cube = 1.0 * n * n * n;
  for (DeterminantMethod method : kMethods) {
    for (uint64_t modulus : {uint64_t{0}, uint64_t{65521}}) {
      SCOPED_TRACE(::testing::Message() << MethodName(method) << " modulus " << modulus);
      JobControl control;
      DeterminantOptions options;
      options.method = method;
      options.modulus = modulus;
      absl::StatusOr<DeterminantResult> result =
          backend().Determinant(modulus > 0 ? b.view() : a.view(), options, &control);
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(control.progress(), 1.0);
      // Every method does between n^3/3 and 2 n^3 operations and moves at least the input; the
      // CUDA modular LU also inverts its 64-column leaves' diagonal blocks (2.67 n^3 in all at
      // n = 64, where the matrix is one leaf).
      EXPECT_GE(result->stats.flops, cube / 3.0);
      EXPECT_LE(result->stats.flops, (modulus > 0 ? 3.0 : 2.0) * cube);
      EXPECT_GE(result->stats.bytes_moved, a.byte_size());
    }
  }
}

TEST_P(DeterminantTest, UnsupportedDTypeIsInvalidArgument) {
  const Matrix m = Matrix::FromValues<uint32_t>(2, 2, std::vector<uint32_t>{1, 2, 3, 4});
  EXPECT_EQ(backend().Determinant(m.view(), {}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Matrix real = Matrix::FromValues<double>(2, 2, std::vector<double>{1, 2, 3, 4});
  DeterminantOptions modular;
  modular.modulus = 7;
  EXPECT_EQ(backend().Determinant(real.view(), modular, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(DeterminantTest);

}  // namespace
}  // namespace matrixd
