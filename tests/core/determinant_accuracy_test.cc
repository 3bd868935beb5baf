// Accuracy of the floating-point determinant on ill-conditioned families (Hilbert, Vandermonde,
// graded singular values), against the exact determinant of the very doubles the backend reads
// (each double is an integer times a power of two: Bareiss over GMP integers). Each backend's
// median relative error per family and method is printed as a table; the CPU backend's median is
// held to a recorded bound, and the CUDA backend's to the same bound and at most 10 x the CPU
// backend's (a regression guard; issue 13's 2 x target is not met yet, docs/benchmarks.md).
#include <gmp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/make_backend.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "core/scaled_number.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"
#include "tests/core/bareiss_reference.h"

namespace matrixd {
namespace {

using testing::BareissDeterminant;
using testing::BigInt;

constexpr DeterminantMethod kMethods[] = {DeterminantMethod::kLu, DeterminantMethod::kCondensation};

const char* MethodName(DeterminantMethod method) {
  return method == DeterminantMethod::kLu ? "LU" : "CONDENSATION";
}

// ---- Families (n x n, row-major) ----

std::vector<double> Hilbert(int n) {
  std::vector<double> a(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) a[i * n + j] = 1.0 / (i + j + 1);
  }
  return a;
}

// Equispaced nodes in [-1, 1]: V_ij = x_i^j.
std::vector<double> Vandermonde(int n) {
  std::vector<double> a(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i) {
    const double x = -1.0 + 2.0 * i / (n - 1);
    double power = 1.0;
    for (int j = 0; j < n; ++j, power *= x) a[i * n + j] = power;
  }
  return a;
}

// (I - 2 v v^T / v^T v) in place on the left of the row-major n x n a.
void ReflectRows(std::vector<double>& a, int n, const std::vector<double>& v) {
  double vv = 0.0;
  for (double x : v) vv += x * x;
  for (int j = 0; j < n; ++j) {
    double dot = 0.0;
    for (int i = 0; i < n; ++i) dot += v[i] * a[i * n + j];
    for (int i = 0; i < n; ++i) a[i * n + j] -= 2.0 * v[i] * dot / vv;
  }
}

// H1 diag(sigma) H2 with sigma_i = 10^(-12 i / (n - 1)) and random Householder reflections.
std::vector<double> GradedSingularValues(int n) {
  std::mt19937_64 rng(1000 + n);
  std::normal_distribution<double> normal;
  const auto random_vector = [&] {
    std::vector<double> v(n);
    for (double& x : v) x = normal(rng);
    return v;
  };
  std::vector<double> a(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) a[i * n + i] = std::pow(10.0, -12.0 * i / (n - 1));
  ReflectRows(a, n, random_vector());
  // Reflecting the columns: transpose, reflect the rows, transpose back.
  std::vector<double> t(a.size());
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) t[j * n + i] = a[i * n + j];
  }
  ReflectRows(t, n, random_vector());
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) a[i * n + j] = t[j * n + i];
  }
  return a;
}

struct Family {
  const char* name;
  std::vector<double> (*make)(int n);
  std::vector<int> sizes;
};
// Hilbert stops at 13: from 14 on the rounded matrix's determinant has no correct digit in double
// on any backward-stable method (cond > 1e18), so its errors would only add noise to the median.
// Vandermonde stops at 64, where its entries span 2^-380..1 (the exact reference grows with it).
const Family kFamilies[] = {
    {"hilbert", Hilbert, {4, 5, 6, 7, 8, 9, 10, 11, 12, 13}},
    {"vandermonde", Vandermonde, {4, 6, 8, 12, 16, 24, 32, 48, 64}},
    {"graded_sv", GradedSingularValues, {4, 6, 8, 12, 16, 24, 32, 64, 100, 200}}};

// ---- The exact reference ----

// Multiplies x by 2^e in steps that stay inside the double range.
void TimesPowerOfTwo(ScaledNumber& x, long e) {  // NOLINT(runtime/int): GMP's exponent type
  while (e != 0) {
    const long step = std::clamp(e, -1000L, 1000L);  // NOLINT(runtime/int)
    x *= std::ldexp(1.0, static_cast<int>(step));
    e -= step;
  }
}

// det of the n x n doubles exactly, rounded: row i is 2^-s_i times integers (53-bit mantissas
// shifted), so det(a) = det(integers) 2^-(sum s_i).
ScaledNumber ExactDeterminant(const std::vector<double>& a, int n) {
  std::vector<std::unique_ptr<BigInt>> m;
  long shift = 0;  // NOLINT(runtime/int)
  for (int i = 0; i < n; ++i) {
    int lowest = 0;
    bool any = false;
    for (int j = 0; j < n; ++j) {
      if (a[i * n + j] == 0.0) continue;
      const int e = std::ilogb(a[i * n + j]) - 52;  // a = integer * 2^e
      lowest = any ? std::min(lowest, e) : e;
      any = true;
    }
    for (int j = 0; j < n; ++j) {
      auto entry = std::make_unique<BigInt>(0);
      const double x = a[i * n + j];
      if (x != 0.0) {
        const int e = std::ilogb(x) - 52;
        mpz_set_d(entry->get(), std::ldexp(x, -e));  // an integer below 2^53: exact
        mpz_mul_2exp(entry->get(), entry->get(), static_cast<mp_bitcnt_t>(e - lowest));
      }
      m.push_back(std::move(entry));
    }
    shift += lowest;
  }
  BigInt det;
  BareissDeterminant(m, n, det);
  long e = 0;  // NOLINT(runtime/int)
  ScaledNumber x = ScaledNumber::Of(mpz_get_d_2exp(&e, det.get()));
  TimesPowerOfTwo(x, e + shift);
  return x;
}

// |computed / reference - 1|.
double RelativeError(const ScaledNumber& computed, const ScaledNumber& reference) {
  ScaledNumber ratio = computed;
  ratio /= reference;
  return std::abs(ratio.ToComplex() - 1.0);
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t half = values.size() / 2;
  return values.size() % 2 == 1 ? values[half] : 0.5 * (values[half - 1] + values[half]);
}

// The exact determinant of `family` at each of its sizes.
std::vector<ScaledNumber> References(const Family& family) {
  std::vector<ScaledNumber> references;
  for (int n : family.sizes) references.push_back(ExactDeterminant(family.make(n), n));
  return references;
}

// `backend`'s relative error on `family` by `method`, one per size.
std::vector<double> Errors(Backend& backend, const Family& family,
                           const std::vector<ScaledNumber>& references, DeterminantMethod method) {
  std::vector<double> errors;
  for (size_t k = 0; k < family.sizes.size(); ++k) {
    const int n = family.sizes[k];
    const std::vector<double> a = family.make(n);
    DeterminantOptions options;
    options.method = method;
    absl::StatusOr<DeterminantResult> result =
        backend.Determinant(Matrix::FromValues<double>(n, n, a).view(), options, nullptr);
    EXPECT_TRUE(result.ok()) << family.name << " n = " << n << ": " << result.status();
    errors.push_back(result.ok() ? RelativeError(result->value, references[k]) : INFINITY);
  }
  return errors;
}

// One row of the printed table: backend, method, family, median, then the error at each size.
double PrintedMedian(const std::string& backend, DeterminantMethod method, const Family& family,
                     const std::vector<double>& errors) {
  const double median = Median(errors);
  std::cout << backend << " " << MethodName(method) << " " << family.name << " median " << median
            << " |";
  for (size_t k = 0; k < errors.size(); ++k) {
    std::cout << " n" << family.sizes[k] << "=" << errors[k];
  }
  std::cout << "\n";
  return median;
}

// About 10 x the CPU backend's medians measured on 2026-11-25 (2-core VM, Debian LAPACK):
// hilbert 1.7e-7 (LU) and 2.2e-7 (condensation), vandermonde 7.1e-13 and 4.8e-11, graded_sv
// 4.3e-7 and 6.5e-6. For scale: Hilbert n = 8 alone is 4.1e-8 by LU, and 2.9e-9 is the relative
// change that rounding the entries to double makes to det(H_8) itself.
double CpuBound(const Family& family) {
  const std::string name = family.name;
  if (name == "hilbert") return 2e-6;
  if (name == "vandermonde") return 5e-10;
  return 1e-4;
}

class DeterminantAccuracyTest : public testing::BackendTest {};

TEST(DeterminantAccuracyReferenceTest, ExactReferenceMatchesKnownDeterminants) {
  // Hilbert 4: 1/6048000, but the reference is of the rounded doubles: within 1e-15 of it.
  EXPECT_NEAR(ExactDeterminant(Hilbert(4), 4).ToComplex().real() * 6048000.0, 1.0, 1e-11);
  // Vandermonde on -1, 1/3, ... : prod_{i<j} (x_j - x_i), all differences exact here.
  const std::vector<double> v = Vandermonde(4);
  double product = 1.0;
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j) product *= v[j * 4 + 1] - v[i * 4 + 1];
  }
  EXPECT_NEAR(ExactDeterminant(v, 4).ToComplex().real() / product, 1.0, 1e-15);
  // A matrix with entries 2^±900 apart in one row: det = 2^900 * 3 - 2^-900 * 1 rounded.
  const std::vector<double> wide = {std::ldexp(1.0, 900), std::ldexp(1.0, -900), 1.0, 3.0};
  EXPECT_DOUBLE_EQ(ExactDeterminant(wide, 2).log_abs(), std::log(3.0) + 900 * std::log(2.0));
}

TEST_P(DeterminantAccuracyTest, MedianErrorPerFamilyWithinBound) {
  std::unique_ptr<Backend> cpu;
  // The backend as the server makes it (small orders from host memory on the host CPU), next to
  // backend(), which runs every order on the device.
  std::unique_ptr<Backend> served;
  if (GetParam() != "cpu") {
    absl::StatusOr<std::unique_ptr<Backend>> made = MakeBackend("cpu", {});
    ASSERT_TRUE(made.ok()) << made.status();
    cpu = *std::move(made);
    made = MakeBackend(GetParam(), {});
    ASSERT_TRUE(made.ok()) << made.status();
    served = *std::move(made);
  }
  for (const Family& family : kFamilies) {
    const std::vector<ScaledNumber> references = References(family);
    for (DeterminantMethod method : kMethods) {
      const double median =
          PrintedMedian(GetParam(), method, family, Errors(backend(), family, references, method));
      if (cpu == nullptr) {
        EXPECT_LE(median, CpuBound(family)) << MethodName(method) << " " << family.name;
      } else {
        const double cpu_median =
            PrintedMedian("cpu", method, family, Errors(*cpu, family, references, method));
        // The device code alone is held to the CPU's recorded bound and, as a regression guard,
        // to 10 x the CPU's median: the first H100 run (2026-11-26) gave 0.4 to 8.6 x (Hilbert
        // condensation 4.4 x, Vandermonde LU 8.6 x, the rest within 2 x; single sizes differ by
        // 10 x either way between the two summation orders).
        EXPECT_LE(median, CpuBound(family)) << MethodName(method) << " " << family.name;
        EXPECT_LE(median, 10.0 * cpu_median) << MethodName(method) << " " << family.name;
        // What a client of the server gets (issue 13's target): at most 2 x the CPU's median.
        const double served_median = PrintedMedian(GetParam() + "-served", method, family,
                                                   Errors(*served, family, references, method));
        EXPECT_LE(served_median, 2.0 * cpu_median) << MethodName(method) << " " << family.name;
      }
    }
  }
}

// Scaling rows by powers of two is exact and leaves every pivot choice alone: the row-major input
// read column-major is A^T, so getrf sees column scalings (each pivot search compares entries of
// one column, all scaled alike), and condensation scales each row to [1, 2) first. So the
// determinant comes out exactly 2^(sum of the powers) times the unscaled one, on each backend.
TEST_P(DeterminantAccuracyTest, RowScalingByPowersOfTwoChangesNothingButTheExponent) {
  for (const Family& family : kFamilies) {
    for (int n : {8, 32}) {
      const std::vector<double> a = family.make(n);
      std::vector<double> scaled = a;
      long total = 0;  // NOLINT(runtime/int)
      for (int i = 0; i < n; ++i) {
        const int power = (i * 97) % 601 - 300;  // in [-300, 300]
        for (int j = 0; j < n; ++j) scaled[i * n + j] = std::ldexp(a[i * n + j], power);
        total += power;
      }
      for (DeterminantMethod method : kMethods) {
        DeterminantOptions options;
        options.method = method;
        absl::StatusOr<DeterminantResult> plain =
            backend().Determinant(Matrix::FromValues<double>(n, n, a).view(), options, nullptr);
        absl::StatusOr<DeterminantResult> rescaled = backend().Determinant(
            Matrix::FromValues<double>(n, n, scaled).view(), options, nullptr);
        ASSERT_TRUE(plain.ok()) << plain.status();
        ASSERT_TRUE(rescaled.ok()) << rescaled.status();
        TimesPowerOfTwo(rescaled->value, -total);
        EXPECT_EQ(RelativeError(rescaled->value, plain->value), 0.0)
            << family.name << " n = " << n << " " << MethodName(method);
      }
    }
  }
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(DeterminantAccuracyTest);

}  // namespace
}  // namespace matrixd
