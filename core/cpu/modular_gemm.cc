#include "core/cpu/modular_gemm.h"

#include <algorithm>
#include <cstdint>
#include <limits>

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

}  // namespace

void SubtractProduct(const BalancedDoubleField& field, const ModularProduct<double>& x,
                     int threads) {
  if (x.m == 0 || x.n == 0 || x.k == 0) return;
  const int reduce_threads = ThreadsFor(x.m, x.n, 1, threads);
  // Every partial sum of a chunk stays an integer below 2^53, so dgemm's result is exact in any
  // order of summation; C is reduced back to balanced residues after each chunk.
  for (int64_t k0 = 0; k0 < x.k; k0 += field.terms()) {
    const int64_t depth = std::min(field.terms(), x.k - k0);
    Gemm<double>(CblasNoTrans, CblasNoTrans, static_cast<blasint>(x.m), static_cast<blasint>(x.n),
                 static_cast<blasint>(depth), -1.0, x.a + k0, static_cast<blasint>(x.lda),
                 x.b + k0 * x.ldb, static_cast<blasint>(x.ldb), 1.0, x.c,
                 static_cast<blasint>(x.ldc));
    RunParallel(CeilDiv(x.m, kRowsPerTask), reduce_threads, nullptr, [&](int64_t task) {
      const int64_t i1 = std::min(x.m, (task + 1) * kRowsPerTask);
      for (int64_t i = task * kRowsPerTask; i < i1; ++i) {
        double* c_row = x.c + i * x.ldc;
        for (int64_t j = 0; j < x.n; ++j) c_row[j] = field.Reduce(c_row[j]);
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
