// The permanent's precisions (EXTENDED, FAST) and walks (dense, sparse) on every backend, against
// exact integer permanents from the INT64 path: dense, 30 %-dense, very sparse, mixed-sign,
// n = 1 to 5, zero rows, permutation-like matrices (every column one row), and the k / 2^20
// matrices of the accuracy table; and the sparse walk's ordering and cost estimate.
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cpu/permanent_arithmetic.h"
#include "core/cpu/permanent_preparation.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"

namespace matrixd {
namespace {

constexpr PermanentMethod kMethods[] = {PermanentMethod::kRyser, PermanentMethod::kGlynn};
constexpr PermanentPrecision kPrecisions[] = {PermanentPrecision::kExtended,
                                              PermanentPrecision::kFast};
constexpr PermanentWalk kWalks[] = {PermanentWalk::kDense, PermanentWalk::kSparse};

std::string Describe(PermanentMethod method, PermanentPrecision precision, PermanentWalk walk) {
  return std::string(method == PermanentMethod::kRyser ? "ryser" : "glynn") +
         (precision == PermanentPrecision::kFast ? " fast" : " extended") +
         (walk == PermanentWalk::kSparse ? " sparse" : " dense");
}

// An n x n integer matrix with entries in [low, high], each non-zero with probability `density`.
std::vector<int64_t> RandomIntegers(int n, uint64_t seed, int64_t low, int64_t high,
                                    double density = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> entry(low, high);
  std::bernoulli_distribution keep(density);
  std::vector<int64_t> a(static_cast<size_t>(n) * n);
  for (int64_t& x : a) x = keep(rng) ? entry(rng) : 0;
  return a;
}

class PermanentPrecisionTest : public testing::BackendTest {
 protected:
  absl::StatusOr<PermanentResult> Compute(const Matrix& m, PermanentMethod method,
                                          PermanentPrecision precision, PermanentWalk walk) {
    PermanentOptions options;
    options.method = method;
    options.precision = precision;
    options.walk = walk;
    return backend().Permanent(m.view(), options, nullptr);
  }

  // per(k) exactly (the INT64 path), as a long double.
  long double Exact(int n, const std::vector<int64_t>& k) {
    const Matrix m = Matrix::FromValues<int64_t>(n, n, k);
    absl::StatusOr<PermanentResult> result =
        backend().Permanent(m.view(), PermanentOptions{}, nullptr);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return NAN;
    EXPECT_EQ(result->precision_used, PermanentPrecision::kExact);
    return std::strtold(result->exact.c_str(), nullptr);
  }

  // Checks that the float64 permanent of k * 2^-scale_bits is within `tolerance` (relative; or
  // absolute when the exact value is 0) of the exact one, for every method, precision and walk.
  void ExpectMatchesExact(int n, const std::vector<int64_t>& k, int scale_bits,
                          double extended_tolerance, double fast_tolerance) {
    const long double exact = std::ldexp(Exact(n, k), -scale_bits * n);
    std::vector<double> a(k.size());
    for (size_t q = 0; q < k.size(); ++q) a[q] = std::ldexp(static_cast<double>(k[q]), -scale_bits);
    const Matrix m = Matrix::FromValues<double>(n, n, a);
    for (PermanentMethod method : kMethods) {
      for (PermanentPrecision precision : kPrecisions) {
        for (PermanentWalk walk : kWalks) {
          const std::string what = Describe(method, precision, walk);
          absl::StatusOr<PermanentResult> result = Compute(m, method, precision, walk);
          ASSERT_TRUE(result.ok()) << what << ": " << result.status();
          // FAST is Glynn's only: Ryser runs EXTENDED and says so.
          const PermanentPrecision ran =
              method == PermanentMethod::kRyser ? PermanentPrecision::kExtended : precision;
          EXPECT_EQ(result->precision_used, ran) << what;
          EXPECT_EQ(result->walk_used, walk) << what;
          const double tolerance =
              ran == PermanentPrecision::kFast ? fast_tolerance : extended_tolerance;
          const long double error = std::fabs(result->value.real() - exact);
          if (exact == 0.0L) {
            EXPECT_EQ(result->value.real(), 0.0) << what;
          } else {
            EXPECT_LE(static_cast<double>(error / std::fabs(exact)), tolerance)
                << what << ": got " << result->value.real() << ", exact "
                << static_cast<double>(exact);
          }
        }
      }
    }
  }
};

TEST_P(PermanentPrecisionTest, DenseIntegerMatrixMatchesExact) {
  ExpectMatchesExact(14, RandomIntegers(14, 1300, 0, 9), 0, 1e-15, 1e-13);
}

TEST_P(PermanentPrecisionTest, ThirtyPercentDenseMatrixMatchesExact) {
  ExpectMatchesExact(16, RandomIntegers(16, 1301, 1, 9, 0.3), 0, 1e-15, 1e-13);
}

TEST_P(PermanentPrecisionTest, MixedSignMatrixMatchesExact) {
  // Mixed signs cancel: FAST loses more of the result than on positive matrices.
  ExpectMatchesExact(14, RandomIntegers(14, 1302, -9, 9), 0, 1e-13, 1e-9);
}

TEST_P(PermanentPrecisionTest, SparseMixedSignMatrixMatchesExact) {
  ExpectMatchesExact(15, RandomIntegers(15, 1303, -9, 9, 0.3), 0, 1e-13, 1e-9);
}

// Six row blocks of the sparse walk (n = 21 pads to 24), the fastest columns touching a few.
TEST_P(PermanentPrecisionTest, ThirtyPercentDenseOrderTwentyOneMatchesExact) {
  ExpectMatchesExact(21, RandomIntegers(21, 1312, 1, 9, 0.3), 0, 1e-15, 1e-13);
}

// 12 % dense with a non-zero diagonal (so the permanent is not 0): most steps touch one block.
TEST_P(PermanentPrecisionTest, VerySparseMatrixMatchesExact) {
  const int n = 17;
  std::vector<int64_t> k = RandomIntegers(n, 1313, -9, 9, 0.12);
  for (int i = 0; i < n; ++i) k[i * n + (i * 5) % n] = 1 + i % 7;
  ExpectMatchesExact(n, k, 0, 1e-13, 1e-9);
}

// Every entry non-zero: each column, the fastest included, touches every row block.
TEST_P(PermanentPrecisionTest, FastColumnsTouchingEveryRowMatchExact) {
  ExpectMatchesExact(13, RandomIntegers(13, 1314, 1, 9, 1.0), 0, 1e-15, 1e-13);
  ExpectMatchesExact(13, RandomIntegers(13, 1315, -9, -1, 1.0), 0, 1e-15, 1e-13);
}

TEST_P(PermanentPrecisionTest, OneByOneIsTheEntry) {
  ExpectMatchesExact(1, {-7}, 0, 0.0, 0.0);
  ExpectMatchesExact(1, {3}, 2, 0.0, 0.0);
}

// Orders around the block size of the sparse walk (4 rows), Glynn's single flipping column at 2.
TEST_P(PermanentPrecisionTest, SmallOrdersMatchExact) {
  for (int n = 2; n <= 5; ++n) {
    ExpectMatchesExact(n, RandomIntegers(n, 1316 + n, -9, 9, 0.7), 0, 1e-15, 1e-14);
  }
}

// A generalised permutation matrix: each column touches one row, so each row is its own group and
// the permanent is the product of the non-zeros; with Glynn's fixed column a full column, the
// other rows are touched by no flipping column until their own.
TEST_P(PermanentPrecisionTest, OneRowPerColumnMatchesExact) {
  const int n = 11;
  std::vector<int64_t> k(static_cast<size_t>(n) * n, 0);
  for (int i = 0; i < n; ++i) k[i * n + (i * 4 + 3) % n] = i % 2 == 0 ? i + 2 : -(i + 1);
  ExpectMatchesExact(n, k, 0, 0.0, 1e-15);
  for (int i = 0; i < n; ++i) k[i * n] = i + 1;  // column 0 full: the densest
  ExpectMatchesExact(n, k, 0, 1e-15, 1e-14);
}

TEST_P(PermanentPrecisionTest, ZeroRowAndZeroColumnGiveZero) {
  const int n = 12;
  std::vector<int64_t> zero_row = RandomIntegers(n, 1304, -5, 9, 0.4);
  for (int j = 0; j < n; ++j) zero_row[5 * n + j] = 0;
  ExpectMatchesExact(n, zero_row, 0, 0.0, 0.0);
  std::vector<int64_t> zero_column = RandomIntegers(n, 1305, 1, 9, 0.4);
  for (int i = 0; i < n; ++i) zero_column[i * n + 3] = 0;
  ExpectMatchesExact(n, zero_column, 0, 0.0, 0.0);
}

// The accuracy table's matrices (entries k / 2^20, k uniform below 2^20): EXTENDED within 1e-14
// of the exact value, positive and mixed-sign.
TEST_P(PermanentPrecisionTest, GridMatricesAreWithinOneEMinusFourteen) {
  const int n = 18;
  ExpectMatchesExact(n, RandomIntegers(n, 1306, 0, (1 << 20) - 1), 20, 1e-14, 1e-11);
  ExpectMatchesExact(n, RandomIntegers(n, 1307, -(1 << 20) + 1, (1 << 20) - 1), 20, 1e-14, 1e-6);
}

// Entries off any common grid: the row sums round, so EXTENDED carries them in double-double and
// FAST restarts them; the walks (several restarts at n = 18) still agree with each other.
TEST_P(PermanentPrecisionTest, OffGridMatrixAgreesAcrossPrecisionsAndWalks) {
  const int n = 18;
  std::mt19937_64 rng(1308);
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  std::bernoulli_distribution keep(0.3);
  std::vector<double> a(static_cast<size_t>(n) * n);
  for (double& x : a) x = keep(rng) ? dist(rng) : 0.0;
  for (int i = 0; i < n; ++i) a[i * n + i] = 1.0 + dist(rng);  // no zero permanent
  const Matrix m = Matrix::FromValues<double>(n, n, a);
  ASSERT_FALSE(cpu::PermanentRowSumsAreExact(a, n));
  absl::StatusOr<PermanentResult> reference =
      Compute(m, PermanentMethod::kGlynn, PermanentPrecision::kExtended, PermanentWalk::kDense);
  ASSERT_TRUE(reference.ok()) << reference.status();
  const double want = reference->value.real();
  for (PermanentMethod method : kMethods) {
    for (PermanentPrecision precision : kPrecisions) {
      for (PermanentWalk walk : kWalks) {
        absl::StatusOr<PermanentResult> result = Compute(m, method, precision, walk);
        ASSERT_TRUE(result.ok()) << result.status();
        const double tolerance =
            result->precision_used == PermanentPrecision::kFast ? 1e-10 : 1e-13;
        EXPECT_NEAR(result->value.real(), want, tolerance * std::fabs(want))
            << Describe(method, precision, walk);
      }
    }
  }
}

// Each backend takes the walk its cost model (SparseWalkCostModel: the CPU's block walk; the GPU's
// head walk where a head fits, else its block walk at 4 x the count) puts under the margin; the
// CPU takes the sparse walk of a 30 %-dense matrix in both precisions, and both take the dense
// walk of a dense matrix.
TEST_P(PermanentPrecisionTest, AutoWalkFollowsTheCostEstimate) {
  const int n = 10;
  const std::vector<int64_t> sparse = RandomIntegers(n, 1309, 1, 9, 0.3);
  const std::vector<int64_t> dense = RandomIntegers(n, 1310, 1, 9, 1.0);
  const bool gpu = std::string(GetParam()) == "cuda";
  for (const PermanentPrecision precision : kPrecisions) {
    for (const auto& [k, is_sparse] : {std::pair{sparse, true}, std::pair{dense, false}}) {
      const std::vector<double> a(k.begin(), k.end());
      const Matrix m = Matrix::FromValues<double>(n, n, a);
      absl::StatusOr<PermanentResult> result =
          Compute(m, PermanentMethod::kAuto, precision, PermanentWalk::kAuto);
      ASSERT_TRUE(result.ok()) << result.status();
      // The estimate of the ordered matrix against the backend's margin.
      absl::StatusOr<cpu::ScaledRows<double>> rows = cpu::ScalePermanentRows<double>(m.view());
      ASSERT_TRUE(rows.ok()) << rows.status();
      const walk::RealArithmetic arithmetic =
          cpu::ChooseRealWalkArithmetic(rows->entries, n, precision, result->method_used)
              .arithmetic();
      std::vector<double> ordered = rows->entries;
      cpu::OrderForSparseWalk(ordered, n, result->method_used);
      const double dense_cost =
          cpu::EstimatePermanentWalkCost(ordered, n, result->method_used, arithmetic).dense;
      const double sparse_cost = cpu::SparseWalkCost(
          ordered, n, result->method_used, arithmetic,
          gpu ? cpu::SparseWalkCostModel::kGpu : cpu::SparseWalkCostModel::kCpu);
      const PermanentWalk want = sparse_cost <= cpu::kSparsePermanentCostRatio * dense_cost
                                     ? PermanentWalk::kSparse
                                     : PermanentWalk::kDense;
      if (!is_sparse) {
        EXPECT_EQ(want, PermanentWalk::kDense);  // the margins' intent, on these matrices
      } else if (!gpu) {
        EXPECT_EQ(want, PermanentWalk::kSparse);
      }
      EXPECT_EQ(result->walk_used, want)
          << (gpu ? "cuda" : "cpu") << " precision " << static_cast<int>(precision);
    }
  }
}

TEST_P(PermanentPrecisionTest, ComplexReportsFastAndInt64ReportsExact) {
  const int n = 6;
  const std::vector<int64_t> k = RandomIntegers(n, 1311, -3, 3, 0.3);
  std::vector<std::complex<double>> c(k.size());
  for (size_t q = 0; q < k.size(); ++q) c[q] = {static_cast<double>(k[q]), 1.0};
  const Matrix complex = Matrix::FromValues<std::complex<double>>(n, n, c);
  const Matrix integer = Matrix::FromValues<int64_t>(n, n, k);
  absl::StatusOr<PermanentResult> a =
      Compute(complex, PermanentMethod::kAuto, PermanentPrecision::kExtended, PermanentWalk::kAuto);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->precision_used, PermanentPrecision::kFast);
  EXPECT_EQ(a->walk_used, PermanentWalk::kDense);
  absl::StatusOr<PermanentResult> b =
      Compute(integer, PermanentMethod::kAuto, PermanentPrecision::kFast, PermanentWalk::kSparse);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->precision_used, PermanentPrecision::kExact);
  EXPECT_EQ(b->walk_used, PermanentWalk::kDense);
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(PermanentPrecisionTest);

TEST(PermanentRowSumsAreExact, GridEntriesAreExactAndSpreadOnesAreNot) {
  const int n = 3;
  EXPECT_TRUE(cpu::PermanentRowSumsAreExact(
      std::vector<double>{1.5, 0.25, 0.0, 1.0, -1.0, 0.5, 1.75, 1.0, 1.0 / 1024}, n));
  // 1 and 2^-60 in a row: their sum needs 61 bits.
  EXPECT_FALSE(cpu::PermanentRowSumsAreExact(
      std::vector<double>{1.0, std::ldexp(1.0, -60), 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0}, n));
  EXPECT_FALSE(
      cpu::PermanentRowSumsAreExact(std::vector<double>{0.1, 0.2, 0.3, 1, 1, 1, 1, 1, 1}, n));
}

TEST(OrderForSparseWalk, SparsestColumnFirstThenFewestNewRowsAndRowsByFirstTouch) {
  const int n = 4;
  // Column non-zeros: 2 (rows 1, 3), 4, 1 (row 2), 2 (rows 2, 3).
  const std::vector<double> a = {0, 1, 0, 0,  //
                                 2, 3, 0, 0,  //
                                 0, 4, 5, 6,  //
                                 7, 8, 0, 9};
  // Ryser: column 2 (1 non-zero), then column 3 (adds row 3 only), then column 0 (adds row 1),
  // then column 1; rows by first touch: 2, 3, 1, 0.
  std::vector<double> ryser = a;
  cpu::OrderForSparseWalk(ryser, n, PermanentMethod::kRyser);
  EXPECT_EQ(ryser, (std::vector<double>{5, 6, 0, 4,  //
                                        0, 9, 7, 8,  //
                                        0, 0, 2, 3,  //
                                        0, 0, 0, 1}));
  // Glynn: column 1 (the densest) stays fixed as column 0, then 2, 3, 0 as above.
  std::vector<double> glynn = a;
  cpu::OrderForSparseWalk(glynn, n, PermanentMethod::kGlynn);
  EXPECT_EQ(glynn, (std::vector<double>{4, 5, 6, 0,  //
                                        8, 0, 9, 7,  //
                                        3, 0, 0, 2,  //
                                        1, 0, 0, 0}));
}

// The ordered walk's column of bit b touches only the rows touched by bits 0..b, which come first.
TEST(OrderForSparseWalk, EachColumnTouchesOnlyThePrefixOfRowsItsBitsReach) {
  const int n = 30;
  std::mt19937_64 rng(1317);
  std::bernoulli_distribution keep(0.3);
  std::vector<double> a(static_cast<size_t>(n) * n);
  for (double& x : a) x = keep(rng) ? 1.0 : 0.0;
  for (const PermanentMethod method : kMethods) {
    std::vector<double> ordered = a;
    cpu::OrderForSparseWalk(ordered, n, method);
    const int first_column = method == PermanentMethod::kGlynn ? 1 : 0;
    for (int j = first_column; j < n; ++j) {
      int last = -1;
      for (int i = 0; i < n; ++i) last = ordered[i * n + j] != 0.0 ? i : last;
      for (int i = 0; i < last; ++i) {
        // Every row above the column's last one is touched by it or an earlier bit.
        bool touched = false;
        for (int c = first_column; c <= j && !touched; ++c) touched = ordered[i * n + c] != 0.0;
        EXPECT_TRUE(touched) << "row " << i << " column " << j;
      }
    }
    double total = 0.0;
    for (double x : ordered) total += x;
    EXPECT_EQ(total, std::accumulate(a.begin(), a.end(), 0.0));
  }
}

TEST(PermanentBlockMasks, EachStepMarksTheBlocksOfItsNonZeroRows) {
  const int n = 6;
  std::vector<double> a(n * n, 0.0);
  a[0 * n + 1] = 1;  // Glynn step 0: row 0 (block 0)
  a[5 * n + 1] = 1;  // and row 5 (block 1)
  a[4 * n + 2] = 1;  // step 1: row 4 (block 1)
  EXPECT_EQ(cpu::PermanentBlockMasks(a, n, PermanentMethod::kGlynn),
            (std::vector<uint64_t>{3, 2, 0, 0, 0}));
  EXPECT_EQ(cpu::PermanentBlockMasks(a, n, PermanentMethod::kRyser),
            (std::vector<uint64_t>{0, 3, 2, 0, 0, 0}));
}

// The estimate in core/cpu/permanent_preparation.h: a random 30 %-dense n = 36 matrix, ordered,
// costs about a third of the dense walk's operations; a dense one about as many, so AUTO keeps
// the dense walk there.
TEST(EstimatePermanentWalkCost, ThirtyPercentDenseOrderThirtySixIsAboutAThird) {
  const int n = 36;
  std::mt19937_64 rng(1318);
  std::bernoulli_distribution keep(0.3);
  std::vector<double> sparse(static_cast<size_t>(n) * n);
  for (double& x : sparse) x = keep(rng) ? 1.0 : 0.0;
  cpu::OrderForSparseWalk(sparse, n, PermanentMethod::kGlynn);
  const std::vector<double> dense(static_cast<size_t>(n) * n, 1.0);
  for (const walk::RealArithmetic arithmetic :
       {walk::RealArithmetic::kFast, walk::RealArithmetic::kExactRows,
        walk::RealArithmetic::kDoubleDoubleRows}) {
    const cpu::PermanentWalkCost s =
        cpu::EstimatePermanentWalkCost(sparse, n, PermanentMethod::kGlynn, arithmetic);
    EXPECT_LT(s.sparse, 0.4 * s.dense) << static_cast<int>(arithmetic);
    const cpu::PermanentWalkCost d =
        cpu::EstimatePermanentWalkCost(dense, n, PermanentMethod::kGlynn, arithmetic);
    EXPECT_GT(d.sparse, cpu::kSparsePermanentCostRatio * d.dense) << static_cast<int>(arithmetic);
  }
  const cpu::PermanentWalkCost fast = cpu::EstimatePermanentWalkCost(
      sparse, n, PermanentMethod::kGlynn, walk::RealArithmetic::kFast);
  EXPECT_EQ(fast.dense, 36 * 2 + 10);
}

}  // namespace
}  // namespace matrixd
