#include "client/reference_math.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace matrixd {
namespace {

__extension__ typedef __int128 Int128;

// The exact determinant of a small integer matrix by fraction-free (Bareiss) elimination.
Int128 BareissDeterminant(std::vector<Int128> a, int n) {
  Int128 sign = 1;
  Int128 previous = 1;
  for (int k = 0; k < n - 1; ++k) {
    if (a[k * n + k] == 0) {
      int swap = k + 1;
      while (swap < n && a[swap * n + k] == 0) ++swap;
      if (swap == n) return 0;
      for (int j = 0; j < n; ++j) std::swap(a[k * n + j], a[swap * n + j]);
      sign = -sign;
    }
    for (int i = k + 1; i < n; ++i) {
      for (int j = k + 1; j < n; ++j) {
        a[i * n + j] = (a[i * n + j] * a[k * n + k] - a[i * n + k] * a[k * n + j]) / previous;
      }
    }
    previous = a[k * n + k];
  }
  return sign * a[n * n - 1];
}

std::vector<int64_t> RandomSmallInts(int n, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<int64_t> entry(-9, 9);
  std::vector<int64_t> a(n * n);
  for (auto& x : a) x = entry(engine);
  return a;
}

ComplexValues AsComplex(const std::vector<int64_t>& a) { return ComplexValues(a.begin(), a.end()); }

TEST(DeterminantReference, MatchesExactIntegerDeterminants) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<int64_t> a = RandomSmallInts(7, seed);
    const Int128 exact = BareissDeterminant(std::vector<Int128>(a.begin(), a.end()), 7);
    const ReferenceDeterminant det = DeterminantReference(AsComplex(a), 7);
    if (exact == 0) {
      EXPECT_EQ(det.log_abs, -std::numeric_limits<long double>::infinity());
      continue;
    }
    const long double magnitude = static_cast<long double>(exact < 0 ? -exact : exact);
    EXPECT_NEAR(static_cast<double>(det.log_abs), static_cast<double>(std::log(magnitude)), 1e-13)
        << "seed " << seed;
    EXPECT_EQ(det.phase.real(), exact < 0 ? -1.0L : 1.0L) << "seed " << seed;
    EXPECT_EQ(det.phase.imag(), 0.0L);
  }
}

TEST(DeterminantReference, ExactlySingularIsMinusInfinity) {
  // Rows 1 + 2 = 2 * row 3 after elimination: a zero pivot, exactly.
  const ReferenceDeterminant det = DeterminantReference({2, 0, 1, 1, 3, 2, 1, 1, 1}, 3);
  EXPECT_EQ(det.log_abs, -std::numeric_limits<long double>::infinity());
  EXPECT_EQ(det.phase, std::complex<long double>(0, 0));
}

TEST(DeterminantReference, RowSwapFlipsTheSign) {
  const ReferenceDeterminant det = DeterminantReference({0, 1, 1, 0}, 2);
  EXPECT_EQ(det.log_abs, 0.0L);
  EXPECT_EQ(det.phase, std::complex<long double>(-1, 0));
}

TEST(DeterminantReference, OneByOne) {
  const ReferenceDeterminant det = DeterminantReference({-0.25}, 1);
  EXPECT_NEAR(static_cast<double>(det.log_abs), std::log(0.25), 1e-18);
  EXPECT_EQ(det.phase, std::complex<long double>(-1, 0));
}

TEST(DeterminantReference, ComplexPhase) {
  // det(i I_2) = -1; det(diag(i, 2)) = 2i.
  const ReferenceDeterminant minus_one = DeterminantReference({{0, 1}, 0, 0, {0, 1}}, 2);
  EXPECT_NEAR(static_cast<double>(minus_one.phase.real()), -1, 1e-18);
  EXPECT_NEAR(static_cast<double>(minus_one.phase.imag()), 0, 1e-18);
  const ReferenceDeterminant two_i = DeterminantReference({{0, 1}, 0, 0, 2}, 2);
  EXPECT_NEAR(static_cast<double>(two_i.log_abs), std::log(2.0), 1e-18);
  EXPECT_NEAR(static_cast<double>(two_i.phase.imag()), 1, 1e-18);
}

TEST(DeterminantReference, HugeAndTinyMagnitudesDoNotOverflow) {
  const ReferenceDeterminant huge =
      DeterminantReference({1e300, 0, 0, 0, 1e300, 0, 0, 0, 1e300}, 3);
  EXPECT_NEAR(static_cast<double>(huge.log_abs), 900 * std::log(10.0), 1e-9);
  const ReferenceDeterminant tiny = DeterminantReference({1e-300, 0, 0, -1e-300}, 2);
  EXPECT_NEAR(static_cast<double>(tiny.log_abs), -600 * std::log(10.0), 1e-9);
  EXPECT_EQ(tiny.phase.real(), -1.0L);
}

uint64_t Mod(Int128 x, uint64_t p) {
  const Int128 r = x % static_cast<Int128>(p);
  return static_cast<uint64_t>(r < 0 ? r + p : r);
}

TEST(DeterminantModP, MatchesExactDeterminantReduced) {
  for (uint64_t p : {uint64_t{7}, uint64_t{1000003}, (uint64_t{1} << 61) - 1}) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      const std::vector<int64_t> a = RandomSmallInts(6, seed);
      const Int128 exact = BareissDeterminant(std::vector<Int128>(a.begin(), a.end()), 6);
      EXPECT_EQ(DeterminantModP(a, 6, p), Mod(exact, p)) << "p " << p << " seed " << seed;
    }
  }
}

TEST(DeterminantModP, SingularModPButNotOverTheIntegers) {
  EXPECT_EQ(DeterminantModP({7, 0, 0, 1}, 2, 7), 0u);
  EXPECT_EQ(DeterminantModP({1, 2, 3, 4}, 2, 7), 5u);  // -2 mod 7
}

TEST(DeterminantModP, ReducesHugeNegativeEntries) {
  const int64_t min = std::numeric_limits<int64_t>::min();
  const uint64_t p = (uint64_t{1} << 61) - 1;
  EXPECT_EQ(DeterminantModP({min}, 1, p), Mod(static_cast<Int128>(min), p));
}

TEST(HilbertLogDeterminant, MatchesKnownExactValues) {
  // det(H_n) = 1, 1/12, 1/2160, 1/6048000, 1/266716800000.
  const double inverse[] = {1, 12, 2160, 6048000, 266716800000.0};
  for (int n = 1; n <= 5; ++n) {
    EXPECT_NEAR(static_cast<double>(HilbertLogDeterminant(n)), -std::log(inverse[n - 1]), 1e-12)
        << n;
  }
}

TEST(PermanentReference, OnesMatrixIsFactorial) {
  long double factorial = 1;
  for (int n = 1; n <= 12; ++n) {
    factorial *= n;
    EXPECT_EQ(PermanentReference(ComplexValues(n * n, 1.0), n).real(), factorial) << n;
  }
}

TEST(PermanentReference, EmptyMatrixIsOne) { EXPECT_EQ(PermanentReference({}, 0).real(), 1.0L); }

TEST(PermanentReference, TwoByTwoAndComplex) {
  EXPECT_EQ(PermanentReference({1, 2, 3, 4}, 2), std::complex<long double>(10, 0));
  // per [[i, 1], [1, i]] = i*i + 1 = 0.
  const std::complex<long double> p = PermanentReference({{0, 1}, 1, 1, {0, 1}}, 2);
  EXPECT_EQ(p, std::complex<long double>(0, 0));
}

TEST(PermanentReference, MatchesTheSumOverPermutations) {
  constexpr int kN = 7;
  std::mt19937_64 engine(3);
  std::uniform_real_distribution<double> unit(-1, 1);
  ComplexValues a(kN * kN);
  for (auto& x : a) x = {unit(engine), unit(engine)};
  std::vector<int> sigma(kN);
  std::iota(sigma.begin(), sigma.end(), 0);
  std::complex<long double> brute = 0;
  do {
    std::complex<long double> product = 1;
    for (int i = 0; i < kN; ++i) {
      product *=
          std::complex<long double>(a[i * kN + sigma[i]].real(), a[i * kN + sigma[i]].imag());
    }
    brute += product;
  } while (std::next_permutation(sigma.begin(), sigma.end()));
  const std::complex<long double> ryser = PermanentReference(a, kN);
  EXPECT_LT(std::abs(ryser - brute), 1e-15L * std::max(1.0L, std::abs(brute)));
}

TEST(ProductEntry, PlainAndTransposed) {
  // A = [[1, 2, 3], [4, 5, 6]], B = [[1, 0], [0, 1], [1, 1]]: A B = [[4, 5], [10, 11]].
  const ComplexValues a = {1, 2, 3, 4, 5, 6};
  const ComplexValues b = {1, 0, 0, 1, 1, 1};
  EXPECT_EQ(ProductEntry(a, 2, 3, false, b, 3, 2, false, 1, 0), std::complex<double>(10, 0));
  EXPECT_EQ(ProductEntry(a, 2, 3, false, b, 3, 2, false, 0, 1), std::complex<double>(5, 0));
  // A^T A: entry (2, 1) = 3*2 + 6*5 = 36.
  EXPECT_EQ(ProductEntry(a, 2, 3, true, a, 2, 3, false, 2, 1), std::complex<double>(36, 0));
  // A A^T: entry (0, 1) = 1*4 + 2*5 + 3*6 = 32.
  EXPECT_EQ(ProductEntry(a, 2, 3, false, a, 2, 3, true, 0, 1), std::complex<double>(32, 0));
}

TEST(RelativeResidual, ZeroForAnExactSolutionAndAbsoluteForZeroRhs) {
  const ComplexValues a = {2, 1, 1, 3};
  EXPECT_EQ(RelativeResidual(a, 2, 2, {1, 1}, 1, {3, 4}), 0.0);
  EXPECT_DOUBLE_EQ(RelativeResidual(a, 2, 2, {1, 1}, 1, {3, 5}), 1 / std::sqrt(34.0));
  EXPECT_DOUBLE_EQ(RelativeResidual(a, 2, 2, {1, 0}, 1, {0, 0}), std::sqrt(5.0));
}

TEST(LuReconstructionError, ExactFactorsWithARowSwap) {
  // A = [[1, 2], [4, 4]]: pivot row 1, L = [[1, 0], [1/4, 1]], U = [[4, 4], [0, 1]].
  const ComplexValues a = {1, 2, 4, 4};
  EXPECT_EQ(LuReconstructionError(a, 2, 2, {4, 4, 0.25, 1}, {1, 0}), 0.0);
  EXPECT_GT(LuReconstructionError(a, 2, 2, {4, 4, 0.25, 1}, {0, 1}), 0.5);
}

TEST(LuReconstructionError, TallMatrix) {
  // A = [[2, 4], [1, 3], [0, 1]] = L U with L = [[1, 0], [0.5, 1], [0, 1]], U = [[2, 4], [0, 1]].
  const ComplexValues a = {2, 4, 1, 3, 0, 1};
  EXPECT_EQ(LuReconstructionError(a, 3, 2, {2, 4, 0.5, 1, 0, 1}, {0, 1, 2}), 0.0);
  EXPECT_GT(LuReconstructionError(a, 3, 2, {2, 4, 0.5, 1, 0, 2}, {0, 1, 2}), 0.1);
}

TEST(CholeskyReconstructionError, RealAndComplexFactors) {
  EXPECT_EQ(CholeskyReconstructionError({4, 2, 2, 10}, 2, {2, 0, 1, 3}), 0.0);
  EXPECT_GT(CholeskyReconstructionError({4, 2, 2, 10}, 2, {2, 0, 1, 2.9}), 0.01);
  // L = [[1, 0], [i, 1]]: L L^H = [[1, -i], [i, 2]].
  const ComplexValues l = {1, 0, {0, 1}, 1};
  EXPECT_EQ(CholeskyReconstructionError({1, {0, -1}, {0, 1}, 2}, 2, l), 0.0);
  EXPECT_GT(CholeskyReconstructionError({1, {0, 1}, {0, -1}, 2}, 2, l), 0.5);
}

TEST(QrReconstructionError, SquareAndTall) {
  // Q = [[0, 1], [1, 0]], R = [[1, 2], [0, 3]]: Q R = [[0, 3], [1, 2]].
  EXPECT_EQ(QrReconstructionError({0, 3, 1, 2}, 2, 2, {0, 1, 1, 0}, {1, 2, 0, 3}), 0.0);
  // Q = first two columns of I_3, R = [[1, 2], [0, 3]].
  EXPECT_EQ(QrReconstructionError({1, 2, 0, 3, 0, 0}, 3, 2, {1, 0, 0, 1, 0, 0}, {1, 2, 0, 3}), 0.0);
  EXPECT_GT(QrReconstructionError({1, 2, 0, 3, 0, 1}, 3, 2, {1, 0, 0, 1, 0, 0}, {1, 2, 0, 3}), 0.1);
}

}  // namespace
}  // namespace matrixd
