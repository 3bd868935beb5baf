// Hager and Higham's 1-norm estimator (core/condition_estimate.h) against the exact ||A^-1||_1 of
// the very doubles given, from the explicit inverse in long double: random real and complex
// matrices, Hilbert matrices and graded singular values, n = 1..200. The solves are done in long
// double too, so that these tests check the estimator and not the solves (the backends' solves are
// checked through Factorize and Determinant, tests/core/factorize_accuracy_test.cc).
#include "core/condition_estimate.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using Complex = std::complex<double>;

template <typename T>
struct WideOf {
  using type = long double;
};
template <>
struct WideOf<Complex> {
  using type = std::complex<long double>;
};

long double Magnitude(long double x) { return std::fabs(x); }
long double Magnitude(std::complex<long double> z) { return std::abs(z); }
long double Conjugate(long double x) { return x; }
std::complex<long double> Conjugate(std::complex<long double> z) { return std::conj(z); }

// P A = L U in long double with partial pivoting, and the solves the estimator asks for. T is
// double or Complex; A is row-major n x n.
template <typename T>
class WideLu {
 public:
  using W = typename WideOf<T>::type;

  WideLu(const std::vector<T>& a, int n) : n_(n), lu_(a.begin(), a.end()), perm_(n) {
    for (int i = 0; i < n; ++i) perm_[i] = i;
    for (int k = 0; k < n; ++k) {
      int pivot = k;
      for (int i = k + 1; i < n; ++i) {
        if (Magnitude(at(i, k)) > Magnitude(at(pivot, k))) pivot = i;
      }
      if (pivot != k) {
        for (int j = 0; j < n; ++j) std::swap(at(k, j), at(pivot, j));
        std::swap(perm_[k], perm_[pivot]);
      }
      for (int i = k + 1; i < n; ++i) {
        at(i, k) /= at(k, k);
        for (int j = k + 1; j < n; ++j) at(i, j) -= at(i, k) * at(k, j);
      }
    }
  }

  // x := A^-1 x, or A^-H x.
  void Solve(bool adjoint, std::vector<W>& x) const {
    const int n = n_;
    if (!adjoint) {
      std::vector<W> y(n);
      for (int i = 0; i < n; ++i) y[i] = x[perm_[i]];
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < i; ++j) y[i] -= at(i, j) * y[j];
      }
      for (int i = n - 1; i >= 0; --i) {
        for (int j = i + 1; j < n; ++j) y[i] -= at(i, j) * y[j];
        y[i] /= at(i, i);
      }
      x = y;
      return;
    }
    // A^H = U^H L^H P: solve U^H z = x, L^H w = z, then x = P^T w.
    std::vector<W> z(x);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < i; ++j) z[i] -= Conjugate(at(j, i)) * z[j];
      z[i] /= Conjugate(at(i, i));
    }
    for (int i = n - 1; i >= 0; --i) {
      for (int j = i + 1; j < n; ++j) z[i] -= Conjugate(at(j, i)) * z[j];
    }
    for (int i = 0; i < n; ++i) x[perm_[i]] = z[i];
  }

  // ||A^-1||_1: the largest column sum of the explicit inverse, column j = A^-1 e_j.
  long double InverseOneNorm() const {
    long double largest = 0;
    for (int j = 0; j < n_; ++j) {
      std::vector<W> e(n_, W(0));
      e[j] = W(1);
      Solve(false, e);
      long double sum = 0;
      for (const W& v : e) sum += Magnitude(v);
      largest = std::max(largest, sum);
    }
    return largest;
  }

  // A BlockInverseApply for the estimator (x row-major n x columns), column by column, rounding
  // through long double.
  absl::Status Apply(bool adjoint, std::span<T> x, int columns) const {
    for (int j = 0; j < columns; ++j) {
      std::vector<W> wide(n_);
      for (int i = 0; i < n_; ++i) wide[i] = x[static_cast<size_t>(i) * columns + j];
      Solve(adjoint, wide);
      for (int i = 0; i < n_; ++i)
        x[static_cast<size_t>(i) * columns + j] = static_cast<T>(wide[i]);
    }
    ++applications_;
    return absl::OkStatus();
  }
  int applications() const { return applications_; }

 private:
  W& at(int i, int j) { return lu_[static_cast<size_t>(i) * n_ + j]; }
  const W& at(int i, int j) const { return lu_[static_cast<size_t>(i) * n_ + j]; }

  int n_;
  std::vector<W> lu_;
  std::vector<int> perm_;
  mutable int applications_ = 0;
};

template <typename T>
double OneNorm(const std::vector<T>& a, int n) {
  double largest = 0;
  for (int j = 0; j < n; ++j) {
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::abs(a[static_cast<size_t>(i) * n + j]);
    largest = std::max(largest, sum);
  }
  return largest;
}

// The estimate never exceeds the exact norm (beyond the long double solves' rounding) and is
// below it by at most `factor`; at most 11 solves.
template <typename T>
void ExpectEstimateBrackets(const std::vector<T>& a, int n, double factor,
                            int columns = kEstimateColumns) {
  const WideLu<T> lu(a, n);
  const long double exact = lu.InverseOneNorm();
  const absl::StatusOr<double> estimate = EstimateInverseOneNorm<T>(
      n, [&](bool adjoint, std::span<T> x, int columns) { return lu.Apply(adjoint, x, columns); },
      columns);
  ASSERT_TRUE(estimate.ok()) << estimate.status();
  EXPECT_LE(*estimate, static_cast<double>(exact) * (1 + 1e-9))
      << "exact " << static_cast<double>(exact);
  EXPECT_GE(*estimate, static_cast<double>(exact) / factor)
      << "exact " << static_cast<double>(exact);
  EXPECT_LE(lu.applications(), 11);
}

std::vector<double> RandomReal(int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> a(static_cast<size_t>(n) * n);
  for (double& x : a) x = uniform(rng);
  return a;
}

std::vector<Complex> RandomComplex(int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<Complex> a(static_cast<size_t>(n) * n);
  for (Complex& z : a) z = Complex(uniform(rng), uniform(rng));
  return a;
}

std::vector<double> Hilbert(int n) {
  std::vector<double> a(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) a[static_cast<size_t>(i) * n + j] = 1.0 / (i + j + 1);
  }
  return a;
}

// (I - 2 v v^T / v^T v) applied on the left (rows) or on the right (columns) of a.
void Reflect(std::vector<double>& a, int n, const std::vector<double>& v, bool rows) {
  double vv = 0;
  for (double x : v) vv += x * x;
  for (int k = 0; k < n; ++k) {
    double dot = 0;
    for (int i = 0; i < n; ++i) dot += v[i] * (rows ? a[i * n + k] : a[k * n + i]);
    for (int i = 0; i < n; ++i) (rows ? a[i * n + k] : a[k * n + i]) -= 2 * v[i] * dot / vv;
  }
}

// U diag(sigma) V^T, sigma_i = 10^(-decades i / (n - 1)), U and V random reflections.
std::vector<double> GradedSingularValues(int n, int decades, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  std::vector<double> a(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) {
    a[static_cast<size_t>(i) * n + i] = n == 1 ? 1.0 : std::pow(10.0, -1.0 * decades * i / (n - 1));
  }
  for (bool rows : {true, false}) {
    std::vector<double> v(n);
    for (double& x : v) x = normal(rng);
    Reflect(a, n, v, rows);
  }
  return a;
}

constexpr int kSizes[] = {1, 2, 3, 4, 5, 7, 8, 10, 16, 25, 32, 50, 64, 100, 128, 150, 200};

TEST(ConditionEstimate, RandomRealMatricesWithinFactorThreeBelowNeverAbove) {
  std::mt19937_64 rng(1);
  for (int n : kSizes) {
    for (int trial = 0; trial < 3; ++trial) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " trial " << trial);
      ExpectEstimateBrackets(RandomReal(n, rng), n, 3.0);
    }
  }
}

TEST(ConditionEstimate, EveryBlockWidthWithinFactorThreeBelowNeverAbove) {
  std::mt19937_64 rng(6);
  for (int columns = 1; columns <= kMaxEstimateColumns; ++columns) {
    for (int n : {1, 2, 3, 5, 16, 64, 150}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " columns " << columns);
      ExpectEstimateBrackets(RandomReal(n, rng), n, 3.0, columns);
      ExpectEstimateBrackets(RandomComplex(n, rng), n, 3.0, columns);
    }
  }
}

// The block's random columns come from a fixed seed: the same matrix gives the same estimate to
// the bit (deterministic mode), whatever ran before.
TEST(ConditionEstimate, RepeatedEstimatesAreBitIdentical) {
  std::mt19937_64 rng(7);
  for (int n : {2, 8, 100}) {
    const std::vector<double> a = GradedSingularValues(n, 9, rng);
    const WideLu<double> lu(a, n);
    const auto apply = [&](bool adjoint, std::span<double> x, int columns) {
      return lu.Apply(adjoint, x, columns);
    };
    const absl::StatusOr<double> first =
        EstimateReciprocalCondition<double>(n, OneNorm(a, n), apply);
    const absl::StatusOr<double> second =
        EstimateReciprocalCondition<double>(n, OneNorm(a, n), apply);
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_EQ(std::bit_cast<uint64_t>(*first), std::bit_cast<uint64_t>(*second)) << "n=" << n;
  }
}

TEST(ConditionEstimate, RandomComplexMatricesWithinFactorThreeBelowNeverAbove) {
  std::mt19937_64 rng(2);
  for (int n : {1, 2, 3, 5, 8, 16, 40, 100}) {
    for (int trial = 0; trial < 3; ++trial) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " trial " << trial);
      ExpectEstimateBrackets(RandomComplex(n, rng), n, 3.0);
    }
  }
}

TEST(ConditionEstimate, HilbertMatricesWithinFactorThree) {
  // kappa_1(H_10) ~ 3.5e13: the long double reference is still good to ~1e-6 there.
  for (int n = 1; n <= 10; ++n) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    ExpectEstimateBrackets(Hilbert(n), n, 3.0);
  }
}

TEST(ConditionEstimate, GradedSingularValuesWithinFactorTen) {
  std::mt19937_64 rng(3);
  for (int n : {2, 3, 5, 10, 32, 64, 100, 200}) {
    for (int decades : {0, 3, 6, 9, 12}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " decades " << decades);
      ExpectEstimateBrackets(GradedSingularValues(n, decades, rng), n, 10.0);
    }
  }
}

TEST(ConditionEstimate, ReciprocalConditionMatchesExactOnIllConditionedMatrices) {
  std::mt19937_64 rng(4);
  for (int decades : {2, 8, 12}) {
    const int n = 40;
    const std::vector<double> a = GradedSingularValues(n, decades, rng);
    const WideLu<double> lu(a, n);
    const double exact = 1.0 / (OneNorm(a, n) * static_cast<double>(lu.InverseOneNorm()));
    const absl::StatusOr<double> rcond = EstimateReciprocalCondition<double>(
        n, OneNorm(a, n), [&](bool adjoint, std::span<double> x, int columns) {
          return lu.Apply(adjoint, x, columns);
        });
    ASSERT_TRUE(rcond.ok()) << rcond.status();
    EXPECT_GE(*rcond, exact * (1 - 1e-9)) << "decades " << decades;
    EXPECT_LE(*rcond, 10 * exact) << "decades " << decades;
  }
}

// A = 2^-1020 B: A^-1 applied in double to the estimator's vectors as given would overflow (the
// sign vector's image is ~ n 2^1020 ||B^-1||); the estimate scales them by ||A||_1 first.
TEST(ConditionEstimate, ReciprocalConditionIsScaleInvariantToTheEdgeOfTheRange) {
  std::mt19937_64 rng(5);
  const int n = 30;
  const std::vector<double> b = RandomReal(n, rng);
  const WideLu<double> lu(b, n);
  const double b_norm = OneNorm(b, n);
  const absl::StatusOr<double> reference = EstimateReciprocalCondition<double>(
      n, b_norm, [&](bool adjoint, std::span<double> x, int columns) {
        return lu.Apply(adjoint, x, columns);
      });
  ASSERT_TRUE(reference.ok());
  for (int exponent : {-1020, -600, 600, 1000}) {
    SCOPED_TRACE(::testing::Message() << "scale 2^" << exponent);
    // (2^e B)^-1 x = 2^-e B^-1 x, in double as a backend would compute it.
    const auto apply = [&](bool adjoint, std::span<double> x, int columns) {
      absl::Status status = lu.Apply(adjoint, x, columns);
      for (double& v : x) v = std::ldexp(v, -exponent);
      return status;
    };
    const absl::StatusOr<double> rcond =
        EstimateReciprocalCondition<double>(n, std::ldexp(b_norm, exponent), apply);
    ASSERT_TRUE(rcond.ok());
    EXPECT_NEAR(*rcond, *reference, 1e-12 * *reference);
  }
}

TEST(ConditionEstimate, OneByOneIsExact) {
  const std::vector<double> a = {-4.0};
  const WideLu<double> lu(a, 1);
  const absl::StatusOr<double> rcond = EstimateReciprocalCondition<double>(
      1, 4.0, [&](bool adjoint, std::span<double> x, int columns) {
        return lu.Apply(adjoint, x, columns);
      });
  ASSERT_TRUE(rcond.ok());
  EXPECT_DOUBLE_EQ(*rcond, 1.0);
}

TEST(ConditionEstimate, ZeroNormOrNonFiniteSolveGivesZero) {
  const auto identity = [](bool, std::span<double>, int) { return absl::OkStatus(); };
  EXPECT_EQ(*EstimateReciprocalCondition<double>(3, 0.0, identity), 0.0);
  EXPECT_EQ(
      *EstimateReciprocalCondition<double>(3, std::numeric_limits<double>::infinity(), identity),
      0.0);
  // A zero pivot: the solve divides by it.
  const auto zero_pivot = [](bool, std::span<double> x, int) {
    for (double& v : x) v = v / 0.0;
    return absl::OkStatus();
  };
  EXPECT_EQ(*EstimateReciprocalCondition<double>(3, 1.0, zero_pivot), 0.0);
  const auto not_a_number = [](bool, std::span<Complex> x, int) {
    for (Complex& v : x) v = Complex(std::nan(""), 0.0);
    return absl::OkStatus();
  };
  EXPECT_EQ(*EstimateReciprocalCondition<Complex>(4, 1.0, not_a_number), 0.0);
}

TEST(ConditionEstimate, SolveFailureIsReturned) {
  const auto failing = [](bool, std::span<double>, int) {
    return absl::InternalError("getrs failed on purpose");
  };
  const absl::StatusOr<double> rcond = EstimateReciprocalCondition<double>(5, 1.0, failing);
  EXPECT_EQ(rcond.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(rcond.status().message(), "getrs failed on purpose");
}

}  // namespace
}  // namespace matrixd
