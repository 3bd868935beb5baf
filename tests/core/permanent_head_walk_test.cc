// The head walk (core/cpu/permanent_head_walk.h), the GPU's sparse walk, run on the host
// with the kernel's own arithmetic: chunk by chunk from row sums started as the kernel starts
// them, against exact integer permanents (int128 Ryser) and the CPU backend's dense walk, for
// every arithmetic, head size and method, on 12 % to fully dense matrices, a zero row, and the
// planner's answers for n = 1, dense matrices and the operation counts of the issue-13 matrices.
#include "core/cpu/permanent_head_walk.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <vector>

#include "core/cpu/permanent.h"
#include "core/cpu/permanent_arithmetic.h"
#include "core/cpu/permanent_preparation.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using walk::RealArithmetic;

// The padded order of the host walks here (n <= kOrder).
constexpr int kOrder = 24;

std::vector<double> RandomEntries(int n, uint64_t seed, int high, double density) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> entry(1, high);
  std::bernoulli_distribution keep(density);
  std::vector<double> a(static_cast<size_t>(n) * n);
  for (double& x : a) x = keep(rng) ? entry(rng) : 0.0;
  return a;
}

// GCC's 128-bit integer (__extension__: -Wpedantic).
__extension__ typedef __int128 ExactInteger;

// per(a) exactly by Ryser's formula, its subsets in Gray-code order (|per| < 2^126 here).
ExactInteger ExactPermanent(const std::vector<double>& a, int n) {
  std::vector<int64_t> row(n, 0);
  ExactInteger total = 0;
  for (uint32_t k = 1; k < (1u << n); ++k) {
    const int j = std::countr_zero(k);
    const bool adds = (((k ^ (k >> 1)) >> j) & 1) != 0;
    for (int i = 0; i < n; ++i) {
      const auto x = static_cast<int64_t>(a[static_cast<size_t>(i) * n + j]);
      row[i] += adds ? x : -x;
    }
    ExactInteger product = 1;
    for (int i = 0; i < n; ++i) product *= row[i];
    total += ((n - std::popcount(k ^ (k >> 1))) % 2 == 0) ? product : -product;
  }
  return total;
}

// The head walk of the ordered n x n matrix a with kHead head rows and head_bits, as the kernel
// runs it: chunks of 2^6 terms (FAST: restarted every chunk, as its segments are), each started
// from the base and the steps of its Gray code in double-double; the permanent.
template <int kHead, RealArithmetic A>
double HeadWalkPermanent(const std::vector<double>& a, int n, PermanentMethod method,
                         int head_bits) {
  const int bits = cpu::PermanentWalkBits(n, method);
  std::vector<double> steps(static_cast<size_t>(bits) * kOrder, 0.0);
  std::vector<double> base(kOrder, 1.0), base_lo(kOrder, 0.0);
  cpu::FillPermanentWalk(a, n, method, kOrder, steps, base, base_lo);
  const int chunk_log2 = std::min(6, bits);
  walk::DoubleDouble sum{0.0, 0.0};
  for (uint64_t begin = 0; begin < (uint64_t{1} << bits); begin += uint64_t{1} << chunk_log2) {
    walk::RowSum<A> r[kOrder];
    const uint64_t gray = walk::GrayCodeOf(begin);
    for (int i = 0; i < kOrder; ++i) {
      double hi = base[i], lo = base_lo[i];
      for (int b = 0; b < bits; ++b) {
        if (((gray >> b) & 1) != 0) walk::AddToRowSum(hi, lo, steps[b * kOrder + i]);
      }
      r[i].Set(A == RealArithmetic::kDoubleDoubleRows ? hi : hi + lo,
               A == RealArithmetic::kDoubleDoubleRows ? lo : 0.0);
    }
    sum = walk::HeadWalkSum<kOrder, kHead, A>(r, steps.data(), head_bits, begin, 1u << chunk_log2,
                                              sum);
  }
  return cpu::FloatPermanentValue(sum.hi + sum.lo, n, method, 0).real();
}

double HeadWalkPermanent(int head_rows, RealArithmetic arithmetic, const std::vector<double>& a,
                         int n, PermanentMethod method, int head_bits) {
  const auto run = [&]<int kHead>() {
    switch (arithmetic) {
      case RealArithmetic::kDoubleDoubleRows:
        return HeadWalkPermanent<kHead, RealArithmetic::kDoubleDoubleRows>(a, n, method, head_bits);
      case RealArithmetic::kExactRows:
        return HeadWalkPermanent<kHead, RealArithmetic::kExactRows>(a, n, method, head_bits);
      case RealArithmetic::kFast:
        break;
    }
    return HeadWalkPermanent<kHead, RealArithmetic::kFast>(a, n, method, head_bits);
  };
  switch (head_rows) {
    case 8:
      return run.operator()<8>();
    case 12:
      return run.operator()<12>();
    case 16:
      return run.operator()<16>();
  }
  return run.operator()<20>();
}

// The CPU backend's dense walk of a at `precision`.
double DenseWalkPermanent(const std::vector<double>& a, int n, PermanentMethod method,
                          PermanentPrecision precision) {
  const Matrix m = Matrix::FromValues<double>(n, n, a);
  PermanentOptions options;
  options.method = method;
  options.precision = precision;
  options.walk = PermanentWalk::kDense;
  absl::StatusOr<PermanentResult> result = cpu::Permanent(m.view(), options, 1, nullptr);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->value.real() : NAN;
}

constexpr RealArithmetic kArithmetics[] = {RealArithmetic::kDoubleDoubleRows,
                                           RealArithmetic::kExactRows, RealArithmetic::kFast};
constexpr PermanentMethod kMethods[] = {PermanentMethod::kRyser, PermanentMethod::kGlynn};

// Every head size that fits each matrix, every arithmetic and method: EXTENDED equals the dense
// walk bit for bit and the exact permanent to the last bit (integer entries: exact row sums);
// FAST (Glynn's only) within 1e-13 of it.
TEST(HeadWalk, MatchesExactAndDenseWalkOnSparseMatrices) {
  struct Case {
    int n;
    double density;
    uint64_t seed;
  };
  int walks = 0;
  for (const Case& c : {Case{9, 0.3, 1}, Case{13, 0.3, 2}, Case{16, 0.12, 3}, Case{17, 0.3, 4},
                        Case{21, 0.2, 5}, Case{20, 0.5, 6}}) {
    for (const PermanentMethod method : kMethods) {
      std::vector<double> a = RandomEntries(c.n, c.seed, 3, c.density);
      const long double exact = static_cast<long double>(ExactPermanent(a, c.n));
      cpu::OrderForSparseWalk(a, c.n, method);
      for (const RealArithmetic arithmetic : kArithmetics) {
        const bool fast = arithmetic == RealArithmetic::kFast;
        // Ryser's terms cancel too much for FAST, which runs EXTENDED there
        // (RealPermanentPrecision).
        if (fast && method == PermanentMethod::kRyser) continue;
        const double dense = DenseWalkPermanent(
            a, c.n, method, fast ? PermanentPrecision::kFast : PermanentPrecision::kExtended);
        for (const int head_rows : walk::kHeadWalkRows) {
          const cpu::HeadWalkPlan plan = cpu::PlanHeadWalk(a, c.n, method, arithmetic, head_rows);
          if (plan.head_rows == 0) continue;
          ASSERT_GE(plan.head_bits, 1);
          ++walks;
          const double value =
              HeadWalkPermanent(head_rows, arithmetic, a, c.n, method, plan.head_bits);
          const auto what = testing::Message()
                            << "n " << c.n << " density " << c.density << " method "
                            << static_cast<int>(method) << " arithmetic "
                            << static_cast<int>(arithmetic) << " head " << head_rows << " bits "
                            << plan.head_bits;
          if (fast) {
            EXPECT_NEAR(value, static_cast<double>(exact), 1e-13 * std::fabs(dense)) << what;
          } else {
            EXPECT_EQ(value, static_cast<double>(exact)) << what;
            EXPECT_EQ(value, dense) << what;
          }
        }
      }
    }
  }
  EXPECT_GT(walks, 40);
}

// A zero row makes every term 0, so the head walk's sum is exactly 0.
TEST(HeadWalk, ZeroRowGivesZero) {
  const int n = 14;
  std::vector<double> a = RandomEntries(n, 7, 3, 0.3);
  for (int j = 0; j < n; ++j) a[static_cast<size_t>(n - 1) * n + j] = 0.0;
  cpu::OrderForSparseWalk(a, n, PermanentMethod::kGlynn);
  const cpu::HeadWalkPlan plan =
      cpu::PlanHeadWalk(a, n, PermanentMethod::kGlynn, RealArithmetic::kExactRows, 8);
  ASSERT_EQ(plan.head_rows, 8);
  EXPECT_EQ(HeadWalkPermanent(8, RealArithmetic::kExactRows, a, n, PermanentMethod::kGlynn,
                              plan.head_bits),
            0.0);
}

// No head fits n = 1 (padded order 4) nor a fully dense matrix (every column touches every row):
// the block walk runs there.
TEST(HeadWalk, NoPlanForOrderOneOrDenseMatrices) {
  const std::vector<double> one = {3.0};
  EXPECT_EQ(
      cpu::ChooseHeadWalk(one, 1, PermanentMethod::kGlynn, RealArithmetic::kExactRows).head_rows,
      0);
  const int n = 24;
  std::vector<double> dense = RandomEntries(n, 8, 5, 1.0);
  cpu::OrderForSparseWalk(dense, n, PermanentMethod::kGlynn);
  for (const int head_rows : walk::kHeadWalkRows) {
    EXPECT_EQ(
        cpu::PlanHeadWalk(dense, n, PermanentMethod::kGlynn, RealArithmetic::kExactRows, head_rows)
            .head_rows,
        0);
  }
}

// The operation counts behind the GPU's choice, printed for the report: the bench's 30 %-dense
// n = 36 pattern (any entries: the counts depend on the pattern only) under the three
// arithmetics, for the dense walk, the block walk and each head size of the head walk. The head
// walk with its best head costs at most 0.75 of the dense walk's operations.
TEST(HeadWalk, OperationCountsOfThirtyPercentDenseOrderThirtySix) {
  const int n = 36;
  for (const uint64_t seed : {1936, 1318, 7}) {
    std::vector<double> a = RandomEntries(n, seed, 1, 0.3);
    cpu::OrderForSparseWalk(a, n, PermanentMethod::kGlynn);
    for (const RealArithmetic arithmetic : kArithmetics) {
      const cpu::PermanentWalkCost cost =
          cpu::EstimatePermanentWalkCost(a, n, PermanentMethod::kGlynn, arithmetic);
      std::printf("seed %llu arithmetic %d: dense %.1f block %.1f",
                  static_cast<unsigned long long>(seed), static_cast<int>(arithmetic), cost.dense,
                  cost.sparse);
      for (const int head_rows : walk::kHeadWalkRows) {
        const cpu::HeadWalkPlan plan =
            cpu::PlanHeadWalk(a, n, PermanentMethod::kGlynn, arithmetic, head_rows);
        std::printf("  head %d: bits %d cost %.1f", head_rows, plan.head_bits, plan.cost);
      }
      const cpu::HeadWalkPlan best = cpu::ChooseHeadWalk(a, n, PermanentMethod::kGlynn, arithmetic);
      std::printf("  -> head %d\n", best.head_rows);
      ASSERT_NE(best.head_rows, 0);
      EXPECT_LT(best.cost, 0.75 * cost.dense);
    }
  }
}

}  // namespace
}  // namespace matrixd
