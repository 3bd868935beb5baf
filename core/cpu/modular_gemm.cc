#include "core/cpu/modular_gemm.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/cpu/block_sparse.h"
#include "core/cpu/lapack_types.h"

namespace matrixd::cpu {
namespace {

__extension__ typedef unsigned __int128 Uint128;

// A task of the uint64 product is a block of kRowsPerTask x kColsPerTask entries of C; it walks
// C in strips of kStripWidth columns (16 beat 4, 8 and 32), whose k x kStripWidth panel of B (16
// KiB at k = 128) stays in L1 while the task's rows pass over it.
constexpr int64_t kRowsPerTask = 32;
constexpr int64_t kColsPerTask = 512;
constexpr int64_t kStripWidth = 16;
// Below this many multiply-adds a product is done before threads would have started.
constexpr double kSmallProduct = 1 << 18;

int64_t CeilDiv(int64_t x, int64_t d) { return x / d + (x % d != 0 ? 1 : 0); }

int ThreadsFor(int64_t m, int64_t n, int64_t k, int threads) {
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return work < kSmallProduct ? 1 : threads;
}

// Reduction of a 128-bit accumulator without a division: with r = 2^64 mod p, hi 2^64 + lo is
// congruent to hi r + lo, and two such folds bring any value below 2^124 + 2^65.
class AccumulatorFold {
 public:
  explicit AccumulatorFold(uint64_t p)
      : r_(static_cast<uint64_t>((Uint128{1} << 64) % p)), terms_(TermsBetweenFolds(p)) {}

  Uint128 operator()(Uint128 x) const {
    const Uint128 y = Uint128{static_cast<uint64_t>(x >> 64)} * r_ + static_cast<uint64_t>(x);
    return Uint128{static_cast<uint64_t>(y >> 64)} * r_ + static_cast<uint64_t>(y);
  }
  // How many products of two residues a folded accumulator takes without wrapping.
  int64_t terms() const { return terms_; }

 private:
  static int64_t TermsBetweenFolds(uint64_t p) {
    const Uint128 folded = (Uint128{1} << 124) + (Uint128{1} << 65);
    const Uint128 product = Uint128{p - 1} * (p - 1);
    const Uint128 terms = (~Uint128{0} - folded) / product;
    return static_cast<int64_t>(
        std::min<Uint128>(terms, static_cast<Uint128>(std::numeric_limits<int64_t>::max())));
  }

  uint64_t r_;
  int64_t terms_;
};

// Rows [i0, i1) of C, columns [j, j + width), in the uint64 product; kWidth > 0 fixes the width
// at compile time so that the accumulators stay in registers.
template <int64_t kWidth>
void SubtractStrip(const ModularProduct<uint64_t>& x, uint64_t p, const AccumulatorFold& fold,
                   int64_t i0, int64_t i1, int64_t j, int64_t width) {
  const int64_t w_end = kWidth > 0 ? kWidth : width;
  for (int64_t i = i0; i < i1; ++i) {
    Uint128 acc[kStripWidth] = {};
    const uint64_t* a_row = x.a + i * x.lda;
    int64_t until_fold = fold.terms();
    for (int64_t kk = 0; kk < x.k; ++kk) {
      const uint64_t l = a_row[kk];
      const uint64_t* b_row = x.b + kk * x.ldb + j;
      for (int64_t w = 0; w < w_end; ++w) acc[w] += Uint128{l} * b_row[w];
      if (--until_fold == 0) {
        for (int64_t w = 0; w < w_end; ++w) acc[w] = fold(acc[w]);
        until_fold = fold.terms();
      }
    }
    uint64_t* c_row = x.c + i * x.ldc + j;
    for (int64_t w = 0; w < w_end; ++w) {
      c_row[w] = SubMod(c_row[w], static_cast<uint64_t>(acc[w] % p), p);
    }
  }
}

// Runs row(i) for every i in [0, m) on up to `threads` threads, kRowsPerTask rows a task.
template <typename Row>
void ForEachRow(int64_t m, int threads, const Row& row) {
  RunParallel(CeilDiv(m, kRowsPerTask), threads, nullptr, [&](int64_t task) {
    const int64_t i1 = std::min(m, (task + 1) * kRowsPerTask);
    for (int64_t i = task * kRowsPerTask; i < i1; ++i) row(i);
  });
}

// out = alpha A[:, k0, k0 + depth) b + beta out, for b (depth x x.n, leading dimension ldb) and
// out (x.m x x.n): every partial sum stays an integer below 2^53 (the field's terms() bound), so
// dgemm's result is exact in any order of summation.
void DgemmPart(const ModularProduct<double>& x, int64_t k0, int64_t depth, double alpha,
               const double* b, int64_t ldb, double beta, double* out, int64_t ldo) {
  Gemm<double>(CblasNoTrans, CblasNoTrans, static_cast<blasint>(x.m), static_cast<blasint>(x.n),
               static_cast<blasint>(depth), alpha, x.a + k0, static_cast<blasint>(x.lda), b,
               static_cast<blasint>(ldb), beta, out, static_cast<blasint>(ldo));
}

}  // namespace

void SubtractProduct(const BalancedDoubleField& field, const ModularProduct<double>& x,
                     int threads) {
  if (x.m == 0 || x.n == 0 || x.k == 0) return;
  const int row_threads = ThreadsFor(x.m, x.n, 1, threads);
  if (!field.split()) {
    for (int64_t k0 = 0; k0 < x.k; k0 += field.terms()) {
      const int64_t depth = std::min(field.terms(), x.k - k0);
      DgemmPart(x, k0, depth, -1.0, x.b + k0 * x.ldb, x.ldb, 1.0, x.c, x.ldc);
      ForEachRow(x.m, row_threads, [&](int64_t i) {
        double* c = x.c + i * x.ldc;
        for (int64_t j = 0; j < x.n; ++j) c[j] = field.Reduce(c[j]);
      });
    }
    return;
  }
  // C -= A (2^16 hi + lo) as C -= A lo and C -= 2^16 (A hi reduced), each product below 2^46.
  std::vector<double> high(static_cast<size_t>(x.k * x.n));
  std::vector<double> low(high.size());
  ForEachRow(x.k, row_threads, [&](int64_t kk) {
    for (int64_t j = 0; j < x.n; ++j) {
      const double b = x.b[kk * x.ldb + j];
      const double h = NearestInteger(b * (1.0 / BalancedDoubleField::kSplitBase));
      high[kk * x.n + j] = h;
      low[kk * x.n + j] = b - BalancedDoubleField::kSplitBase * h;
    }
  });
  std::vector<double> high_product(static_cast<size_t>(x.m * x.n));
  for (int64_t k0 = 0; k0 < x.k; k0 += field.terms()) {
    const int64_t depth = std::min(field.terms(), x.k - k0);
    DgemmPart(x, k0, depth, -1.0, low.data() + k0 * x.n, x.n, 1.0, x.c, x.ldc);
    DgemmPart(x, k0, depth, 1.0, high.data() + k0 * x.n, x.n, 0.0, high_product.data(), x.n);
    ForEachRow(x.m, row_threads, [&](int64_t i) {
      double* c = x.c + i * x.ldc;
      const double* h = high_product.data() + i * x.n;
      for (int64_t j = 0; j < x.n; ++j) {
        c[j] =
            field.Reduce(field.Reduce(c[j]) - BalancedDoubleField::kSplitBase * field.Reduce(h[j]));
      }
    });
  }
}

void SubtractProduct(const Uint64Field& field, const ModularProduct<uint64_t>& x, int threads) {
  if (x.m == 0 || x.n == 0 || x.k == 0) return;
  const uint64_t p = field.modulus();
  const AccumulatorFold fold(p);
  const int64_t col_tasks = CeilDiv(x.n, kColsPerTask);
  RunParallel(CeilDiv(x.m, kRowsPerTask) * col_tasks, ThreadsFor(x.m, x.n, x.k, threads), nullptr,
              [&](int64_t task) {
                const int64_t i0 = (task / col_tasks) * kRowsPerTask;
                const int64_t i1 = std::min(x.m, i0 + kRowsPerTask);
                const int64_t j0 = (task % col_tasks) * kColsPerTask;
                const int64_t j1 = std::min(x.n, j0 + kColsPerTask);
                int64_t j = j0;
                for (; j + kStripWidth <= j1; j += kStripWidth) {
                  SubtractStrip<kStripWidth>(x, p, fold, i0, i1, j, kStripWidth);
                }
                if (j < j1) SubtractStrip<0>(x, p, fold, i0, i1, j, j1 - j);
              });
}

}  // namespace matrixd::cpu
