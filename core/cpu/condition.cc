#include "core/cpu/condition.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <span>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "core/condition_estimate.h"
#include "core/cpu/lapack_types.h"

namespace matrixd::cpu {
namespace {

// Rows of a diagonal block. Each block costs t ?trsv and t ?gemv calls; the off-diagonal ?gemv
// reads its block column once per right-hand side, the second time from cache while a 64-wide
// column (64 n elements) fits in L2/L3. 64 was the fastest of 64, 128 and 256 at n = 4096 on
// the 2-core VM.
constexpr int64_t kBlock = 64;

// One triangular solve op(M) x = b, M the n x n triangle (uplo) of the array, for each of the t
// columns of the column-major x (leading dimension n), by block columns: with op = N the solved
// block updates the rest (right-looking ?gemv), with op = T/C the block first takes the solved
// part's contribution (left-looking ?gemv with op), so that ?gemv always reads M's block column
// (i, j in the block column) in place, in either storage.
template <typename T>
void SolveTriangle(CBLAS_UPLO uplo, CBLAS_TRANSPOSE op, CBLAS_DIAG diag, int64_t n, const T* a,
                   int64_t ld, Storage storage, T* x, int t) {
  const CBLAS_ORDER order = storage == Storage::kRowMajor ? CblasRowMajor : CblasColMajor;
  const auto at = [&](int64_t i, int64_t j) {
    return storage == Storage::kRowMajor ? a + i * ld + j : a + i + j * ld;
  };
  const bool lower = uplo == CblasLower;
  const bool forward = lower == (op == CblasNoTrans);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  const T one = 1;
  const T minus_one = -1;
  const auto lda = static_cast<blasint>(ld);
  for (int64_t step = 0; step < blocks; ++step) {
    const int64_t block = forward ? step : blocks - 1 - step;
    const int64_t r0 = block * kBlock;
    const int64_t w = std::min(kBlock, n - r0);
    // The rows of M's block column off the diagonal block: below it (lower) or above (upper).
    const int64_t p0 = lower ? r0 + w : 0;
    const int64_t rest = lower ? n - (r0 + w) : r0;
    for (int j = 0; j < t; ++j) {
      T* column = x + j * n;
      if (op != CblasNoTrans && rest > 0) {
        Lapack<T>::gemv(order, op, static_cast<blasint>(rest), static_cast<blasint>(w),
                        BlasScalar(minus_one), at(p0, r0), lda, column + p0, 1, BlasScalar(one),
                        column + r0, 1);
      }
      Lapack<T>::trsv(order, uplo, op, diag, static_cast<blasint>(w), at(r0, r0), lda, column + r0,
                      1);
      if (op == CblasNoTrans && rest > 0) {
        Lapack<T>::gemv(order, CblasNoTrans, static_cast<blasint>(rest), static_cast<blasint>(w),
                        BlasScalar(minus_one), at(p0, r0), lda, column + r0, 1, BlasScalar(one),
                        column + p0, 1);
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
                                           Storage storage, double one_norm, int* solves) {
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
  std::vector<T> columns;
  auto apply = [&](bool transpose, std::span<Wide> block, int t) -> absl::Status {
    columns.resize(static_cast<size_t>(n) * t);
    for (int64_t i = 0; i < n; ++i) {
      for (int j = 0; j < t; ++j) columns[i + j * n] = static_cast<T>(block[i * t + j]);
    }
    for (int s = 0; s < steps; ++s) {
      const TriangleStep& step = transpose ? adjoint[s] : forward[s];
      SolveTriangle(step.uplo, step.op, step.diag, n, a, ld, storage, columns.data(), t);
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int j = 0; j < t; ++j) block[i * t + j] = static_cast<Wide>(columns[i + j * n]);
    }
    return absl::OkStatus();
  };
  HostInverseNormBlock<Wide> block(n, BlockInverseApply<Wide>(apply));
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
                                                         Storage, double, int*);              \
  template double UpperTriangleOneNorm<T>(int64_t, const T*, int64_t, Storage);
MATRIXD_INSTANTIATE_CONDITION(float)
MATRIXD_INSTANTIATE_CONDITION(double)
MATRIXD_INSTANTIATE_CONDITION(std::complex<float>)
MATRIXD_INSTANTIATE_CONDITION(std::complex<double>)
#undef MATRIXD_INSTANTIATE_CONDITION

}  // namespace matrixd::cpu
