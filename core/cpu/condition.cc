#include "core/cpu/condition.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/condition_estimate.h"
#include "core/cpu/lapack_types.h"

namespace matrixd::cpu {
namespace {

// Rows of a diagonal block. Each block costs t ?trsv and t ?gemv calls; the off-diagonal ?gemv
// reads its block of M once per right-hand side, the second time from cache while 64 n elements
// fit in L2/L3. 64 was the fastest of 64, 128 and 256 at n = 4096 on the 2-core VM.
constexpr int64_t kBlock = 64;

// op(M) x = b for the w x w triangle (uplo, diag) at m, as ?trsv, by plain loops on this thread:
// OpenBLAS (0.3.21, Debian 12) hands every ?trsv a buffer from blas_memory_alloc under one
// process-wide mutex, which small requests computed side by side on the server's threads waited
// for (core/cpu/small_lu_condition.h). Each x_i is one dot product with the solved part of x.
template <typename T>
void SolveDiagonalBlock(CBLAS_UPLO uplo, CBLAS_TRANSPOSE op, CBLAS_DIAG diag, int64_t w, const T* m,
                        int64_t ld, bool row_major, T* x) {
  // Entry (i, j) of op(M).
  const auto entry = [&](int64_t i, int64_t j) -> T {
    if (op != CblasNoTrans) std::swap(i, j);
    const T value = row_major ? m[i * ld + j] : m[i + j * ld];
    if constexpr (kIsComplex<T>) {
      if (op == CblasConjTrans) return std::conj(value);
    }
    return value;
  };
  const bool lower = (uplo == CblasLower) == (op == CblasNoTrans);
  for (int64_t step = 0; step < w; ++step) {
    const int64_t i = lower ? step : w - 1 - step;
    T sum = x[i];
    const int64_t k0 = lower ? 0 : i + 1;
    const int64_t k1 = lower ? i : w;
    for (int64_t k = k0; k < k1; ++k) sum -= entry(i, k) * x[k];
    x[i] = diag == CblasUnit ? sum : sum / entry(i, i);
  }
}

// One triangular solve op(M) x = b, M the n x n triangle (uplo) of the array, for each of the t
// columns of the column-major x (leading dimension n), by blocks of rows: each block takes the
// solved part's contribution (left-looking) or hands its own to the unsolved part (right-looking)
// through one ?gemv, chosen so that the ?gemv reads M by contiguous runs: block columns of a
// column-major array, block rows of a row-major one.
template <typename T>
void SolveTriangle(CBLAS_UPLO uplo, CBLAS_TRANSPOSE op, CBLAS_DIAG diag, int64_t n, const T* a,
                   int64_t ld, Storage storage, T* x, int t) {
  const bool row_major = storage == Storage::kRowMajor;
  const CBLAS_ORDER order = row_major ? CblasRowMajor : CblasColMajor;
  const auto at = [&](int64_t i, int64_t j) { return row_major ? a + i * ld + j : a + i + j * ld; };
  const bool plain = op == CblasNoTrans;
  const bool forward = (uplo == CblasLower) == plain;
  // op = N reads M[block, solved] (a block row) left-looking, M[unsolved, block] (a block column)
  // right-looking; op = T/C the other way round.
  const bool left_looking = plain == row_major;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  const T one = 1;
  const T minus_one = -1;
  const auto lda = static_cast<blasint>(ld);
  const auto gemv = [&](CBLAS_TRANSPOSE trans, int64_t rows, int64_t cols, const T* m, const T* in,
                        T* out) {
    if (rows > 0 && cols > 0) {
      Lapack<T>::gemv(order, trans, static_cast<blasint>(rows), static_cast<blasint>(cols),
                      BlasScalar(minus_one), m, lda, in, 1, BlasScalar(one), out, 1);
    }
  };
  for (int64_t step = 0; step < blocks; ++step) {
    const int64_t r0 = (forward ? step : blocks - 1 - step) * kBlock;
    const int64_t w = std::min(kBlock, n - r0);
    // Rows already solved and rows still to solve.
    const int64_t solved0 = forward ? 0 : r0 + w;
    const int64_t solved = forward ? r0 : n - (r0 + w);
    const int64_t unsolved0 = forward ? r0 + w : 0;
    const int64_t unsolved = forward ? n - (r0 + w) : r0;
    for (int j = 0; j < t; ++j) {
      T* column = x + j * n;
      if (left_looking) {
        // x_b -= op(M)[b, solved] x_solved.
        if (plain) {
          gemv(CblasNoTrans, w, solved, at(r0, solved0), column + solved0, column + r0);
        } else {
          gemv(op, solved, w, at(solved0, r0), column + solved0, column + r0);
        }
      }
      SolveDiagonalBlock(uplo, op, diag, w, at(r0, r0), ld, row_major, column + r0);
      if (!left_looking) {
        // x_unsolved -= op(M)[unsolved, b] x_b.
        if (plain) {
          gemv(CblasNoTrans, unsolved, w, at(unsolved0, r0), column + r0, column + unsolved0);
        } else {
          gemv(op, w, unsolved, at(r0, unsolved0), column + r0, column + unsolved0);
        }
      }
    }
  }
}

struct TriangleStep {
  CBLAS_UPLO uplo;
  CBLAS_TRANSPOSE op;
  CBLAS_DIAG diag;
};

}  // namespace

template <typename T>
absl::StatusOr<double> ReciprocalCondition(Factors factors, int64_t n, const T* a, int64_t ld,
                                           Storage storage, double one_norm, int* solves,
                                           int columns) {
  using Wide = std::conditional_t<kIsComplex<T>, std::complex<double>, double>;
  constexpr CBLAS_TRANSPOSE kAdjoint = kIsComplex<T> ? CblasConjTrans : CblasTrans;
  // A^-1 and A^-H as triangular solves in order, for each kind of factors.
  TriangleStep forward[2];
  TriangleStep adjoint[2];
  int steps = 2;
  switch (factors) {
    case Factors::kLu:  // A^-1 ~ U^-1 L^-1, A^-H ~ L^-H U^-H
      forward[0] = {CblasLower, CblasNoTrans, CblasUnit};
      forward[1] = {CblasUpper, CblasNoTrans, CblasNonUnit};
      adjoint[0] = {CblasUpper, kAdjoint, CblasNonUnit};
      adjoint[1] = {CblasLower, kAdjoint, CblasUnit};
      break;
    case Factors::kCholesky:  // A^-1 = A^-H = L^-H L^-1
      forward[0] = adjoint[0] = {CblasLower, CblasNoTrans, CblasNonUnit};
      forward[1] = adjoint[1] = {CblasLower, kAdjoint, CblasNonUnit};
      break;
    case Factors::kUpper:
      steps = 1;
      forward[0] = {CblasUpper, CblasNoTrans, CblasNonUnit};
      adjoint[0] = {CblasUpper, kAdjoint, CblasNonUnit};
      break;
  }
  // The estimator's row-major block, rounded to T and laid out column by column for the solves.
  std::vector<T> by_column;
  auto apply = [&](bool transpose, std::span<Wide> block, int t) -> absl::Status {
    by_column.resize(static_cast<size_t>(n) * t);
    for (int64_t i = 0; i < n; ++i) {
      for (int j = 0; j < t; ++j) by_column[i + j * n] = static_cast<T>(block[i * t + j]);
    }
    for (int s = 0; s < steps; ++s) {
      const TriangleStep& step = transpose ? adjoint[s] : forward[s];
      SolveTriangle(step.uplo, step.op, step.diag, n, a, ld, storage, by_column.data(), t);
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int j = 0; j < t; ++j) block[i * t + j] = static_cast<Wide>(by_column[i + j * n]);
    }
    return absl::OkStatus();
  };
  HostInverseNormBlock<Wide> block(n, BlockInverseApply<Wide>(apply), columns);
  return EstimateReciprocalCondition(block, one_norm, solves);
}

template <typename T>
double UpperTriangleOneNorm(int64_t n, const T* a, int64_t ld, Storage storage) {
  std::vector<double> sums(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i; j < n; ++j) {
      sums[j] += std::abs(storage == Storage::kRowMajor ? a[i * ld + j] : a[i + j * ld]);
    }
  }
  double norm = 0.0;
  // NaN propagates, as ?lantr's does.
  for (const double sum : sums)
    norm = std::isnan(sum) || std::isnan(norm) ? NAN : std::max(norm, sum);
  return norm;
}

#define MATRIXD_INSTANTIATE_CONDITION(T)                                                      \
  template absl::StatusOr<double> ReciprocalCondition<T>(Factors, int64_t, const T*, int64_t, \
                                                         Storage, double, int*, int);         \
  template double UpperTriangleOneNorm<T>(int64_t, const T*, int64_t, Storage);
MATRIXD_INSTANTIATE_CONDITION(float)
MATRIXD_INSTANTIATE_CONDITION(double)
MATRIXD_INSTANTIATE_CONDITION(std::complex<float>)
MATRIXD_INSTANTIATE_CONDITION(std::complex<double>)
#undef MATRIXD_INSTANTIATE_CONDITION

}  // namespace matrixd::cpu
