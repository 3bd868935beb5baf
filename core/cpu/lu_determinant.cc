#include "core/cpu/lu_determinant.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <optional>
#include <utility>
#include <vector>

// std::complex for LAPACK's complex types: the same layout as Fortran's COMPLEX*16, and it keeps
// C99 _Complex (not ISO C++) out of this file.
#define LAPACK_COMPLEX_CUSTOM
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <cblas.h>
#include <lapacke.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/condition_estimate.h"
#include "core/cpu/condition.h"
#include "core/cpu/small_lu_condition.h"

namespace matrixd::cpu {
namespace {

// Block columns of this width between cancellation checks; matrices up to twice as wide go to
// getrf in one call.
constexpr int64_t kBlock = 256;

// The row-major n x n array read as column-major is A^T, and det(A^T) = det(A): the factorization
// runs on the transpose in place, with no copy.
lapack_int Getrf(lapack_int m, lapack_int n, double* a, lapack_int lda, lapack_int* ipiv) {
  return LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);
}
lapack_int Getrf(lapack_int m, lapack_int n, std::complex<double>* a, lapack_int lda,
                 lapack_int* ipiv) {
  return LAPACKE_zgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);
}

// Up to this order the condition estimate is ?gecon's (one vector at a time on this thread,
// cheaper there than the block estimator's BLAS calls per block and step: a small determinant's
// request spent about twice its LU in the latter, docs/benchmarks.md, "Where a det 32 request's
// server CPU goes"), its solves as plain loops (core/cpu/small_lu_condition.h) unless they
// overflow. Larger orders take the block estimator, whose solves are threaded.
constexpr int64_t kGeconMaxOrder = kSmallConditionMaxOrder;
// ?gecon's estimator (?lacn2) usually stops after this many solves, each with both triangles:
// what is counted when ?gecon itself runs (it does not say how many it did).
constexpr int kGeconSolves = 5;

// ?gecon with the 1-norm: 1 / (||A||_1 ||A^-1||_1) estimated from getrf's factors of A (n x n,
// column-major, leading dimension lda) and one_norm = ||A||_1; 0 when the norm is 0 or not finite
// or LAPACK refuses. The _work variant: no NaN scan, the workspace ours.
double Gecon(lapack_int n, const double* a, lapack_int lda, double one_norm) {
  if (!(one_norm > 0.0) || !std::isfinite(one_norm)) return 0.0;
  std::vector<double> work(4 * static_cast<size_t>(n));
  std::vector<lapack_int> iwork(static_cast<size_t>(n));
  double rcond = 0.0;
  const lapack_int info = LAPACKE_dgecon_work(LAPACK_COL_MAJOR, '1', n, a, lda, one_norm, &rcond,
                                              work.data(), iwork.data());
  return info == 0 && std::isfinite(rcond) ? rcond : 0.0;
}
double Gecon(lapack_int n, const std::complex<double>* a, lapack_int lda, double one_norm) {
  if (!(one_norm > 0.0) || !std::isfinite(one_norm)) return 0.0;
  std::vector<std::complex<double>> work(2 * static_cast<size_t>(n));
  std::vector<double> rwork(2 * static_cast<size_t>(n));
  double rcond = 0.0;
  const lapack_int info = LAPACKE_zgecon_work(LAPACK_COL_MAJOR, '1', n, a, lda, one_norm, &rcond,
                                              work.data(), rwork.data());
  return info == 0 && std::isfinite(rcond) ? rcond : 0.0;
}

// The reciprocal condition of the matrix whose getrf factors are the n x n column-major `lu`
// (leading dimension n), its 1-norm `one_norm`: ?gecon up to kGeconMaxOrder, the block estimator
// beyond. Sets *solves to the solves done (kGeconSolves counted for ?gecon itself) and *columns
// to the right-hand sides of each.
template <typename T>
double EstimateLuCondition(int64_t n, const T* lu, double one_norm, int* solves, int* columns) {
  if (n <= kGeconMaxOrder) {
    *solves = 0;
    *columns = 1;
    if (!(one_norm > 0.0) || !std::isfinite(one_norm)) return 0.0;
    if (const std::optional<double> rcond = SmallLuReciprocalCondition(n, lu, one_norm, solves)) {
      return *rcond;
    }
    *solves = kGeconSolves;
    return Gecon(static_cast<lapack_int>(n), lu, static_cast<lapack_int>(n), one_norm);
  }
  *columns = kEstimateColumns;
  return ReciprocalCondition<T>(Factors::kLu, n, lu, n, Storage::kColumnMajor, one_norm, solves)
      .value_or(0.0);
}

// The _work variants skip LAPACKE's NaN scan, which would read past a sub-block.
void Laswp(lapack_int n, double* a, lapack_int lda, lapack_int k2, const lapack_int* ipiv) {
  LAPACKE_dlaswp_work(LAPACK_COL_MAJOR, n, a, lda, 1, k2, ipiv, 1);
}
void Laswp(lapack_int n, std::complex<double>* a, lapack_int lda, lapack_int k2,
           const lapack_int* ipiv) {
  LAPACKE_zlaswp_work(LAPACK_COL_MAJOR, n, a, lda, 1, k2, ipiv, 1);
}

// B := L^-1 B with L unit lower triangular (m x m).
void TrsmUnitLower(blasint m, blasint n, const double* l, blasint ldl, double* b, blasint ldb) {
  cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, m, n, 1.0, l, ldl, b,
              ldb);
}
void TrsmUnitLower(blasint m, blasint n, const std::complex<double>* l, blasint ldl,
                   std::complex<double>* b, blasint ldb) {
  const std::complex<double> one = 1.0;
  cblas_ztrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, m, n, &one, l, ldl, b,
              ldb);
}

// C := C - A B.
void GemmSubtract(blasint m, blasint n, blasint k, const double* a, blasint lda, const double* b,
                  blasint ldb, double* c, blasint ldc) {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, -1.0, a, lda, b, ldb, 1.0, c,
              ldc);
}
void GemmSubtract(blasint m, blasint n, blasint k, const std::complex<double>* a, blasint lda,
                  const std::complex<double>* b, blasint ldb, std::complex<double>* c,
                  blasint ldc) {
  const std::complex<double> minus_one = -1.0;
  const std::complex<double> one = 1.0;
  cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, &minus_one, a, lda, b, ldb, &one,
              c, ldc);
}

// ||A||_1 of the column-major n x n A.
double OneNorm(lapack_int n, const double* a) {
  return LAPACKE_dlange_work(LAPACK_COL_MAJOR, '1', n, n, a, n, nullptr);
}
double OneNorm(lapack_int n, const std::complex<double>* a) {
  return LAPACKE_zlange_work(LAPACK_COL_MAJOR, '1', n, n, a, n, nullptr);
}
bool IsFinite(double x) { return std::isfinite(x); }
bool IsFinite(std::complex<double> z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); }

// Real operations per multiply-add: 2, or 8 for complex numbers.
double FlopsPerUpdate(double) { return 2.0; }
double FlopsPerUpdate(std::complex<double>) { return 8.0; }

template <typename T>
absl::StatusOr<LuDeterminantResult> Factor(std::vector<T> a, int64_t n,
                                           const ProgressRange& progress, ComputeStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t block = n <= 2 * kBlock ? n : kBlock;
  const auto ld = static_cast<lapack_int>(n);
  const auto at = [&a, n](int64_t row, int64_t col) { return a.data() + row + col * n; };
  std::vector<lapack_int> pivots(static_cast<size_t>(block));
  // ||A^T||_1 = ||A||_inf: the 1-norm condition of the transpose factorized here is A's
  // infinity-norm condition.
  const double norm = OneNorm(ld, a.data());
  ScaledNumber det;
  bool odd_permutation = false;
  for (int64_t k = 0; k < n; k += block) {
    if (progress.cancelled()) return absl::CancelledError("determinant cancelled");
    const int64_t width = std::min(block, n - k);
    const int64_t height = n - k;
    const int64_t right = n - k - width;
    const lapack_int info = Getrf(static_cast<lapack_int>(height), static_cast<lapack_int>(width),
                                  at(k, k), ld, pivots.data());
    if (info < 0) return absl::InternalError(absl::StrCat("getrf rejected argument ", -info));
    for (int64_t i = 0; i < width; ++i) {
      if (pivots[i] != i + 1) odd_permutation = !odd_permutation;
      const T diagonal = *at(k + i, k + i);
      if (!IsFinite(diagonal)) {
        return absl::OutOfRangeError(
            "determinant: element growth during LU overflowed the double range");
      }
      det *= diagonal;
    }
    // info > 0: an exactly zero pivot, so prod diag(U) is exactly zero.
    if (info > 0) return LuDeterminantResult{.det = ScaledNumber::Zero(), .rcond = 0.0};
    // The panel's row swaps on L left of it too, so that the packed factors are those of P A for
    // the condition estimate (n^2 / 2 swaps in all, against n^3 / 3 updates).
    if (k > 0)
      Laswp(static_cast<lapack_int>(k), at(k, 0), ld, static_cast<lapack_int>(width),
            pivots.data());
    if (right > 0) {
      // The panel's row swaps, then U12 = L11^-1 A12 and A22 -= L21 U12.
      Laswp(static_cast<lapack_int>(right), at(k, k + width), ld, static_cast<lapack_int>(width),
            pivots.data());
      TrsmUnitLower(static_cast<blasint>(width), static_cast<blasint>(right), at(k, k), ld,
                    at(k, k + width), ld);
      GemmSubtract(static_cast<blasint>(height - width), static_cast<blasint>(right),
                   static_cast<blasint>(width), at(k + width, k), ld, at(k, k + width), ld,
                   at(k + width, k + width), ld);
    }
    const double h = static_cast<double>(height);
    const double w = static_cast<double>(width);
    const double r = static_cast<double>(right);
    // Panel getrf ~ h w^2 - w^3/3 updates, trsm w^2 r / 2, gemm (h - w) r w.
    stats->flops +=
        FlopsPerUpdate(T()) * (h * w * w - w * w * w / 3.0 + w * w * r / 2.0 + (h - w) * r * w);
    // Panel and U12 read and written, L21 read, A22 read and written.
    stats->bytes_moved += static_cast<uint64_t>(
        sizeof(T) * (2.0 * h * w + 2.0 * w * r + (h - w) * w + 2.0 * (h - w) * r));
    const double left = r / static_cast<double>(n);
    progress.Report(1.0 - left * left * left);
  }
  if (odd_permutation) det.Negate();
  const auto factored = std::chrono::steady_clock::now();
  stats->kernels.push_back({.kernel = "lu",
                            .seconds = std::chrono::duration<double>(factored - start).count(),
                            .bytes = stats->bytes_moved,
                            .flops = stats->flops});
  // ?gecon for small orders, the block estimator beyond: a few solves, O(n^2) each.
  int solves = 0;
  int columns = 0;
  const double rcond = EstimateLuCondition(n, a.data(), norm, &solves, &columns);
  const double nd = static_cast<double>(n);
  const double flops = FlopsPerUpdate(T()) * columns * solves * nd * nd;
  const auto bytes = static_cast<uint64_t>(solves * sizeof(T) * nd * nd);
  stats->flops += flops;
  stats->bytes_moved += bytes;
  stats->kernels.push_back(
      {.kernel = "condition_estimate",
       .seconds =
           std::chrono::duration<double>(std::chrono::steady_clock::now() - factored).count(),
       .bytes = bytes,
       .flops = flops});
  return LuDeterminantResult{.det = det, .rcond = rcond};
}

}  // namespace

double LuReciprocalCondition(int64_t n, const double* lu, double norm) {
  int solves = 0;
  int columns = 0;
  return EstimateLuCondition(n, lu, norm, &solves, &columns);
}
double LuReciprocalCondition(int64_t n, const std::complex<double>* lu, double norm) {
  int solves = 0;
  int columns = 0;
  return EstimateLuCondition(n, lu, norm, &solves, &columns);
}

absl::StatusOr<LuDeterminantResult> LuDeterminant(std::vector<double> a, int64_t n,
                                                  const ProgressRange& progress,
                                                  ComputeStats* stats) {
  return Factor(std::move(a), n, progress, stats);
}

absl::StatusOr<LuDeterminantResult> LuDeterminant(std::vector<std::complex<double>> a, int64_t n,
                                                  const ProgressRange& progress,
                                                  ComputeStats* stats) {
  return Factor(std::move(a), n, progress, stats);
}

}  // namespace matrixd::cpu
