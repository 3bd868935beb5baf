// Permanents on every backend, both methods, against the definition (a sum over all permutations
// in long double or GMP integers) and against closed forms (n!, derangement numbers).
#include <gmp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "core/cpu/cpu_backend.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"

namespace matrixd {
namespace {

using Complex = std::complex<double>;
using ComplexLong = std::complex<long double>;

constexpr PermanentMethod kMethods[] = {PermanentMethod::kRyser, PermanentMethod::kGlynn};

const char* MethodName(PermanentMethod method) {
  return method == PermanentMethod::kRyser ? "ryser" : "glynn";
}

// Owns one GMP integer.
class BigInt {
 public:
  BigInt() { mpz_init(value_); }
  ~BigInt() { mpz_clear(value_); }
  BigInt(const BigInt&) = delete;
  BigInt& operator=(const BigInt&) = delete;
  mpz_ptr get() { return value_; }
  std::string ToString() {
    std::unique_ptr<char, void (*)(void*)> text(mpz_get_str(nullptr, 10, value_), free);
    return std::string(text.get());
  }

 private:
  mpz_t value_;
};

void SetInt64(mpz_ptr z, int64_t v) {
  // mpz_set_si takes a long, which is 64 bits on the platforms we build for.
  static_assert(sizeof(long) == 8);
  mpz_set_si(z, static_cast<long>(v));
}

// The definition: sum over all n! permutations sigma of prod_i a[i][sigma(i)].
template <typename T, typename Acc>
Acc PermanentByDefinition(const std::vector<T>& a, int n) {
  std::vector<int> sigma(n);
  std::iota(sigma.begin(), sigma.end(), 0);
  Acc sum = 0;
  do {
    Acc product = 1;
    for (int i = 0; i < n; ++i) product *= static_cast<Acc>(a[i * n + sigma[i]]);
    sum += product;
  } while (std::next_permutation(sigma.begin(), sigma.end()));
  return sum;
}

std::string ExactPermanentByDefinition(const std::vector<int64_t>& a, int n) {
  std::vector<int> sigma(n);
  std::iota(sigma.begin(), sigma.end(), 0);
  BigInt sum, product, entry;
  do {
    mpz_set_ui(product.get(), 1);
    for (int i = 0; i < n; ++i) {
      SetInt64(entry.get(), a[i * n + sigma[i]]);
      mpz_mul(product.get(), product.get(), entry.get());
    }
    mpz_add(sum.get(), sum.get(), product.get());
  } while (std::next_permutation(sigma.begin(), sigma.end()));
  return sum.ToString();
}

std::string Factorial(int n) {
  BigInt f;
  mpz_fac_ui(f.get(), n);
  return f.ToString();
}

// D_n, the number of permutations without a fixed point: D_0 = 1, D_n = n D_(n-1) + (-1)^n.
int64_t Derangements(int n) {
  int64_t d = 1;
  for (int k = 1; k <= n; ++k) d = k * d + (k % 2 == 0 ? 1 : -1);
  return d;
}

std::vector<double> RandomReal(int n, uint64_t seed, double low = -1.0, double high = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(low, high);
  std::vector<double> a(n * n);
  for (double& x : a) x = dist(rng);
  return a;
}

std::vector<Complex> RandomComplex(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<Complex> a(n * n);
  for (Complex& x : a) x = Complex(dist(rng), dist(rng));
  return a;
}

// J (all ones), or J - I when `derangement`.
template <typename T>
std::vector<T> OnesMatrix(int n, bool derangement) {
  std::vector<T> a(n * n, T(1));
  if (derangement) {
    for (int i = 0; i < n; ++i) a[i * n + i] = T(0);
  }
  return a;
}

double RelativeError(Complex value, ComplexLong want) {
  const long double error = std::abs(ComplexLong(value.real(), value.imag()) - want);
  return static_cast<double>(error / std::abs(want));
}

class PermanentTest : public testing::BackendTest {
 protected:
  template <typename T>
  PermanentResult Run(int n, const std::vector<T>& values, PermanentMethod method,
                      JobControl* control = nullptr) {
    const Matrix m = Matrix::FromValues<T>(n, n, values);
    PermanentOptions options;
    options.method = method;
    absl::StatusOr<PermanentResult> result = backend().Permanent(m.view(), options, control);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return PermanentResult{};
    EXPECT_EQ(result->method_used, method);
    return *std::move(result);
  }
};

TEST_P(PermanentTest, RandomRealMatchesDefinition) {
  for (int n = 1; n <= 8; ++n) {
    const std::vector<double> a = RandomReal(n, 100 + n);
    std::vector<double> abs_a(a.size());
    std::transform(a.begin(), a.end(), abs_a.begin(), [](double x) { return std::fabs(x); });
    const long double want = PermanentByDefinition<double, long double>(a, n);
    // Rounding scales with the terms, bounded by per(|A|), not with |per(A)|, which can be small.
    const long double scale = PermanentByDefinition<double, long double>(abs_a, n);
    for (PermanentMethod method : kMethods) {
      const PermanentResult result = Run(n, a, method);
      EXPECT_NEAR(result.value.real(), want, 1e-14 * scale) << MethodName(method) << " n=" << n;
      EXPECT_EQ(result.value.imag(), 0.0);
      EXPECT_TRUE(result.exact.empty());
    }
  }
}

TEST_P(PermanentTest, RandomComplexMatchesDefinition) {
  for (int n = 1; n <= 8; ++n) {
    const std::vector<Complex> a = RandomComplex(n, 200 + n);
    std::vector<double> abs_a(a.size());
    std::transform(a.begin(), a.end(), abs_a.begin(), [](Complex x) { return std::abs(x); });
    const ComplexLong want = PermanentByDefinition<Complex, ComplexLong>(a, n);
    const long double scale = PermanentByDefinition<double, long double>(abs_a, n);
    for (PermanentMethod method : kMethods) {
      const PermanentResult result = Run(n, a, method);
      const long double error =
          std::abs(ComplexLong(result.value.real(), result.value.imag()) - want);
      EXPECT_LE(error, 1e-14 * scale)
          << MethodName(method) << " n=" << n << " got " << result.value << " want "
          << static_cast<double>(want.real()) << "+" << static_cast<double>(want.imag()) << "i";
    }
  }
}

TEST_P(PermanentTest, SinglePrecisionInputsAreSummedInDouble) {
  const int n = 7;
  const std::vector<double> wide = RandomReal(n, 300);
  std::vector<float> a(wide.begin(), wide.end());
  std::vector<std::complex<float>> c(a.size());
  for (size_t i = 0; i < a.size(); ++i) c[i] = {a[i], a[(i * 5 + 3) % a.size()]};
  const long double want = PermanentByDefinition<float, long double>(a, n);
  const ComplexLong want_complex = PermanentByDefinition<std::complex<float>, ComplexLong>(c, n);
  for (PermanentMethod method : kMethods) {
    // float arithmetic would be off by ~1e-6 relative; double is ~1e-15.
    EXPECT_LT(RelativeError(Run(n, a, method).value, want), 1e-12) << MethodName(method);
    EXPECT_LT(RelativeError(Run(n, c, method).value, want_complex), 1e-12) << MethodName(method);
  }
}

TEST_P(PermanentTest, AllOnesGivesFactorial) {
  for (int n : {1, 2, 3, 7, 12, 17, 20}) {
    const double factorial = std::stod(Factorial(n));
    for (PermanentMethod method : kMethods) {
      const PermanentResult exact = Run(n, OnesMatrix<int64_t>(n, false), method);
      EXPECT_EQ(exact.exact, Factorial(n)) << MethodName(method) << " n=" << n;
      EXPECT_EQ(exact.value.real(), factorial) << MethodName(method) << " n=" << n;
      const PermanentResult real = Run(n, OnesMatrix<double>(n, false), method);
      EXPECT_NEAR(real.value.real(), factorial, 1e-14 * factorial)
          << MethodName(method) << " n=" << n;
    }
  }
}

TEST_P(PermanentTest, OnesMinusIdentityGivesDerangements) {
  for (int n : {1, 2, 3, 6, 11, 16, 20}) {
    const int64_t d = Derangements(n);
    for (PermanentMethod method : kMethods) {
      const PermanentResult exact = Run(n, OnesMatrix<int64_t>(n, true), method);
      EXPECT_EQ(exact.exact, std::to_string(d)) << MethodName(method) << " n=" << n;
      const PermanentResult real = Run(n, OnesMatrix<double>(n, true), method);
      // D_1 = 0 exactly; otherwise relative.
      EXPECT_NEAR(real.value.real(), static_cast<double>(d), 1e-14 * static_cast<double>(d))
          << MethodName(method) << " n=" << n;
    }
  }
}

TEST_P(PermanentTest, RyserAndGlynnAgreeAtSixteen) {
  const int n = 16;
  // Positive entries: no cancellation in the definition, so the two are comparable to ~1e-15.
  const std::vector<double> a = RandomReal(n, 400, 0.0, 1.0);
  const double ryser = Run(n, a, PermanentMethod::kRyser).value.real();
  const double glynn = Run(n, a, PermanentMethod::kGlynn).value.real();
  EXPECT_GT(ryser, 0.0);
  EXPECT_NEAR(ryser, glynn, 1e-13 * std::fabs(glynn));

  const std::vector<Complex> c = RandomComplex(n, 401);
  const Complex ryser_c = Run(n, c, PermanentMethod::kRyser).value;
  const Complex glynn_c = Run(n, c, PermanentMethod::kGlynn).value;
  EXPECT_GT(std::abs(glynn_c), 0.0);
  EXPECT_LT(std::abs(ryser_c - glynn_c), 1e-9 * std::abs(glynn_c))
      << "ryser " << ryser_c << " glynn " << glynn_c;
}

TEST_P(PermanentTest, IntegerValuedFloatsMatchTheExactPermanentAtEighteen) {
  const int n = 18;
  std::mt19937_64 rng(450);
  std::uniform_int_distribution<int64_t> dist(0, 9);
  std::vector<int64_t> exact_input(n * n);
  for (int64_t& x : exact_input) x = dist(rng);
  const std::vector<double> a(exact_input.begin(), exact_input.end());
  for (PermanentMethod method : kMethods) {
    const PermanentResult exact = Run(n, exact_input, method);
    ASSERT_FALSE(exact.exact.empty());
    const double want = std::stod(exact.exact);
    EXPECT_NEAR(Run(n, a, method).value.real(), want, 1e-14 * want) << MethodName(method);
  }
}

TEST_P(PermanentTest, OneByOneIsTheEntry) {
  for (PermanentMethod method : kMethods) {
    EXPECT_EQ(Run(1, std::vector<double>{-3.25}, method).value, Complex(-3.25));
    EXPECT_EQ(Run(1, std::vector<Complex>{{1.5, -2.0}}, method).value, Complex(1.5, -2.0));
    const PermanentResult exact =
        Run(1, std::vector<int64_t>{std::numeric_limits<int64_t>::min()}, method);
    EXPECT_EQ(exact.exact, "-9223372036854775808");
    EXPECT_EQ(exact.value.real(), -9223372036854775808.0);
  }
}

TEST_P(PermanentTest, ZeroRowGivesZero) {
  const int n = 9;
  std::vector<double> a = RandomReal(n, 500);
  std::vector<int64_t> b(a.size());
  std::transform(a.begin(), a.end(), b.begin(),
                 [](double x) { return static_cast<int64_t>(x * 1000.0) + 5000; });
  for (int j = 0; j < n; ++j) a[4 * n + j] = 0.0;
  for (int j = 0; j < n; ++j) b[7 * n + j] = 0;
  for (PermanentMethod method : kMethods) {
    EXPECT_EQ(Run(n, a, method).value, Complex(0.0)) << MethodName(method);
    const PermanentResult exact = Run(n, b, method);
    EXPECT_EQ(exact.exact, "0") << MethodName(method);
    EXPECT_EQ(exact.value, Complex(0.0)) << MethodName(method);
  }
}

TEST_P(PermanentTest, ZeroColumnGivesZero) {
  const int n = 9;
  std::vector<double> a = RandomReal(n, 501);
  for (int i = 0; i < n; ++i) a[i * n + 0] = 0.0;  // column 0: Glynn's fixed delta_0 column
  std::vector<double> b = RandomReal(n, 502);
  for (int i = 0; i < n; ++i) b[i * n + 5] = 0.0;
  for (PermanentMethod method : kMethods) {
    // Exact zero is not guaranteed (the terms cancel in floating point): compare with the scale
    // of the terms.
    EXPECT_NEAR(Run(n, a, method).value.real(), 0.0, 1e-12) << MethodName(method);
    EXPECT_NEAR(Run(n, b, method).value.real(), 0.0, 1e-12) << MethodName(method);
  }
}

TEST_P(PermanentTest, ScalingByHugeAndTinyFactorsScalesByTheNthPower) {
  const int n = 10;
  const std::vector<double> a = RandomReal(n, 600, 0.0, 1.0);
  for (PermanentMethod method : kMethods) {
    const double base = Run(n, a, method).value.real();
    ASSERT_GT(base, 0.0);
    for (double c : {1e30, 1e-30}) {
      std::vector<double> scaled(a);
      for (double& x : scaled) x *= c;
      const long double want =
          static_cast<long double>(base) * std::pow(static_cast<long double>(c), n);
      const double got = Run(n, scaled, method).value.real();
      ASSERT_TRUE(std::isfinite(got)) << MethodName(method) << " c=" << c;
      ASSERT_NE(got, 0.0) << MethodName(method) << " c=" << c;
      EXPECT_LT(std::fabs((got - want) / want), 1e-13) << MethodName(method) << " c=" << c;
    }
  }
}

TEST_P(PermanentTest, RowsOfWildlyDifferentScalesNeitherOverflowNorUnderflow) {
  const int n = 5;
  std::vector<double> a = RandomReal(n, 650, 0.5, 1.0);
  std::vector<Complex> c = RandomComplex(n, 651);
  // A subnormal row and rows of 1e300 and 1e-200: the permanent is ~1e-10, but products of the raw
  // row sums in double taken in an unlucky order pass through 0 or inf (rows 0, 2 and 4 together
  // give 1e-610, rows 1 and 3 1e600).
  const double scales[] = {1e-310, 1e300, 1e-200, 1e300, 1e-100};
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      a[i * n + j] *= scales[i];
      c[i * n + j] *= scales[i];
    }
  }
  const long double want = PermanentByDefinition<double, long double>(a, n);
  const ComplexLong want_complex = PermanentByDefinition<Complex, ComplexLong>(c, n);
  for (PermanentMethod method : kMethods) {
    EXPECT_LT(RelativeError(Run(n, a, method).value, want), 1e-12) << MethodName(method);
    EXPECT_LT(RelativeError(Run(n, c, method).value, want_complex), 1e-10) << MethodName(method);
  }
}

TEST_P(PermanentTest, LargeInt64EntriesAreExact) {
  const int n = 6;
  std::mt19937_64 rng(700);
  std::uniform_int_distribution<int64_t> dist(-(int64_t{1} << 40), int64_t{1} << 40);
  std::vector<int64_t> a(n * n);
  for (int64_t& x : a) x = dist(rng);
  const std::string want = ExactPermanentByDefinition(a, n);
  for (PermanentMethod method : kMethods) {
    const PermanentResult result = Run(n, a, method);
    EXPECT_EQ(result.exact, want) << MethodName(method);
    EXPECT_EQ(result.value.real(), std::stod(want)) << MethodName(method);
  }
}

TEST_P(PermanentTest, ExtremeInt64EntriesAreExact) {
  const int n = 5;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> a(n * n);
  for (int k = 0; k < n * n; ++k) a[k] = (k * 7) % 3 == 0 ? kMin : (k % 2 == 0 ? kMax : -1 - k);
  const std::string want = ExactPermanentByDefinition(a, n);
  for (PermanentMethod method : kMethods) {
    EXPECT_EQ(Run(n, a, method).exact, want) << MethodName(method);
  }
}

TEST_P(PermanentTest, AutoUsesGlynnAndReportsWork) {
  const int n = 9;
  const Matrix m = Matrix::FromValues<double>(n, n, RandomReal(n, 800));
  const absl::StatusOr<PermanentResult> result =
      backend().Permanent(m.view(), PermanentOptions{}, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->method_used, PermanentMethod::kGlynn);
  EXPECT_EQ(result->stats.bytes_moved, m.byte_size());
  const double glynn_flops = std::ldexp(1.0, n - 1) * 2 * n;
  EXPECT_GE(result->stats.flops, glynn_flops / 2);
  EXPECT_LE(result->stats.flops, glynn_flops * 2);
}

TEST_P(PermanentTest, RefusesOrderAboveSixtyTwo) {
  const Matrix m(63, 63, DType::kFloat64);
  const absl::StatusOr<PermanentResult> result =
      backend().Permanent(m.view(), PermanentOptions{}, nullptr);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("matrix"), std::string::npos) << result.status();
}

TEST_P(PermanentTest, RefusesNonSquare) {
  const Matrix m(3, 4, DType::kFloat64);
  EXPECT_EQ(backend().Permanent(m.view(), PermanentOptions{}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(PermanentTest, ProgressReachesOneAfterSuccess) {
  const int n = 18;
  JobControl control;
  Run(n, RandomReal(n, 900), PermanentMethod::kGlynn, &control);
  EXPECT_EQ(control.progress(), 1.0);
}

TEST_P(PermanentTest, CancelStopsAGlynnAtThirtyPromptly) {
  // n = 30 takes seconds on a CPU; the GPU gets a walk 64 times longer so that it cannot finish
  // within the 50 ms before the cancel either.
  const int n = GetParam() == "cuda" ? 36 : 30;
  const Matrix m = Matrix::FromValues<double>(n, n, RandomReal(n, 1000));
  JobControl control;
  PermanentOptions options;
  options.method = PermanentMethod::kGlynn;
  absl::StatusOr<PermanentResult> result;
  std::chrono::steady_clock::time_point returned;
  std::thread job([&] {
    result = backend().Permanent(m.view(), options, &control);
    returned = std::chrono::steady_clock::now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto cancelled = std::chrono::steady_clock::now();
  control.Cancel();
  job.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
  const double latency_ms = std::chrono::duration<double, std::milli>(returned - cancelled).count();
  // ~10 ms expected; the bound is generous for loaded 2-core CI machines.
  EXPECT_LT(latency_ms, 500.0);
  EXPECT_LT(control.progress(), 1.0);
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(PermanentTest);

// The CPU splits the walk the same way whatever its thread count and adds the chunks' sums in
// order, so results are reproducible bit for bit.
TEST(CpuPermanentTest, SameBitsOnAnyThreadCount) {
  const int n = 20;
  const Matrix real = Matrix::FromValues<double>(n, n, RandomReal(n, 1100));
  const Matrix complex = Matrix::FromValues<Complex>(n, n, RandomComplex(n, 1101));
  const std::unique_ptr<Backend> one = MakeCpuBackend({.threads = 1});
  const std::unique_ptr<Backend> three = MakeCpuBackend({.threads = 3});
  for (PermanentMethod method : kMethods) {
    PermanentOptions options;
    options.method = method;
    for (const Matrix* m : {&real, &complex}) {
      const absl::StatusOr<PermanentResult> a = one->Permanent(m->view(), options, nullptr);
      const absl::StatusOr<PermanentResult> b = three->Permanent(m->view(), options, nullptr);
      ASSERT_TRUE(a.ok()) << a.status();
      ASSERT_TRUE(b.ok()) << b.status();
      EXPECT_EQ(a->value, b->value) << MethodName(method);
    }
  }
}

}  // namespace
}  // namespace matrixd
