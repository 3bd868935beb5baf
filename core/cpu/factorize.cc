#include "core/cpu/factorize.h"

#include <algorithm>
#include <complex>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/lapack_types.h"

namespace matrixd::cpu {
namespace {

// A complex multiply-add costs four real ones: flop counts of complex routines are 4x.
template <typename T>
constexpr double kFlopScale = kIsComplex<T> ? 4.0 : 1.0;

// LAPACK Working Note 41 counts, with k = min(m, n): getrf does mnk - (m+n)k^2/2 + k^3/3
// multiply-adds; geqrf (and orgqr building m x k from k reflectors) twice that.
double LuFlops(double m, double n) {
  const double k = std::min(m, n);
  return 2.0 * m * n * k - (m + n) * k * k + 2.0 * k * k * k / 3.0;
}
double HouseholderFlops(double m, double n) { return 2.0 * LuFlops(m, n); }

absl::Status LapackError(const char* routine, lapack_int info) {
  return absl::InternalError(absl::StrCat(routine, " rejected its arguments (info = ", info, ")"));
}

// The elements of a matrix we own, for LAPACK to overwrite.
template <typename T>
T* Data(Matrix& m) {
  return m.As<T>().data();
}

template <typename T>
absl::StatusOr<FactorizeResult> Lu(const MatrixView& a, const MatrixView* rhs) {
  const lapack_int m = static_cast<lapack_int>(a.rows);
  const lapack_int n = static_cast<lapack_int>(a.cols);
  FactorizeResult result;
  result.kind = FactorizationKind::kLu;
  result.lu = Matrix::CopyOf(a);
  std::vector<lapack_int> ipiv(std::min(m, n));
  const lapack_int info =
      Lapack<T>::getrf(LAPACK_ROW_MAJOR, m, n, Data<T>(result.lu), n, ipiv.data());
  if (info < 0) return LapackError("getrf", info);
  // ipiv holds 1-based row swaps applied in order; replaying them on the identity gives, for each
  // row of L U, the row of A it came from.
  result.permutation.resize(m);
  std::iota(result.permutation.begin(), result.permutation.end(), int64_t{0});
  for (size_t i = 0; i < ipiv.size(); ++i) {
    std::swap(result.permutation[i], result.permutation[ipiv[i] - 1]);
  }
  if (info > 0) result.singular_column = info - 1;
  result.stats.flops = kFlopScale<T> * LuFlops(m, n);
  result.stats.bytes_moved = 2 * a.byte_size();
  if (rhs == nullptr) return result;

  if (info > 0) {
    const int64_t k = info - 1;
    return absl::FailedPreconditionError(
        absl::StrCat("matrix is singular: U[", k, ",", k, "] = 0 at column ", k, "; cannot solve"));
  }
  Matrix x = Matrix::CopyOf(*rhs);
  const lapack_int nrhs = static_cast<lapack_int>(rhs->cols);
  const lapack_int solve_info = Lapack<T>::getrs(LAPACK_ROW_MAJOR, 'N', n, nrhs, Data<T>(result.lu),
                                                 n, ipiv.data(), Data<T>(x), nrhs);
  if (solve_info < 0) return LapackError("getrs", solve_info);
  result.stats.flops += kFlopScale<T> * 2.0 * n * n * nrhs;
  result.stats.bytes_moved += 2 * rhs->byte_size();
  result.solution = std::move(x);
  return result;
}

template <typename T>
absl::StatusOr<FactorizeResult> Cholesky(const MatrixView& a, const MatrixView* rhs) {
  const lapack_int n = static_cast<lapack_int>(a.rows);
  FactorizeResult result;
  result.kind = FactorizationKind::kCholesky;
  result.l = Matrix::CopyOf(a);
  T* l = Data<T>(result.l);
  const lapack_int info = Lapack<T>::potrf(LAPACK_ROW_MAJOR, 'L', n, l, n);
  if (info < 0) return LapackError("potrf", info);
  if (info > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "matrix is not positive definite: the leading minor of order ", info, " is not positive"));
  }
  // potrf leaves the upper triangle as it found it (a copy of A).
  for (int64_t i = 0; i < n; ++i) std::fill(l + i * n + i + 1, l + (i + 1) * n, T(0));
  result.stats.flops = kFlopScale<T> * n * static_cast<double>(n) * n / 3.0;
  result.stats.bytes_moved = 2 * a.byte_size();
  if (rhs == nullptr) return result;

  Matrix x = Matrix::CopyOf(*rhs);
  const lapack_int nrhs = static_cast<lapack_int>(rhs->cols);
  const lapack_int solve_info =
      Lapack<T>::potrs(LAPACK_ROW_MAJOR, 'L', n, nrhs, l, n, Data<T>(x), nrhs);
  if (solve_info < 0) return LapackError("potrs", solve_info);
  result.stats.flops += kFlopScale<T> * 2.0 * n * n * nrhs;
  result.stats.bytes_moved += 2 * rhs->byte_size();
  result.solution = std::move(x);
  return result;
}

template <typename T>
absl::StatusOr<FactorizeResult> Qr(const MatrixView& a, const MatrixView* rhs) {
  const lapack_int m = static_cast<lapack_int>(a.rows);
  const lapack_int n = static_cast<lapack_int>(a.cols);
  const lapack_int k = std::min(m, n);
  FactorizeResult result;
  result.kind = FactorizationKind::kQr;
  Matrix work = Matrix::CopyOf(a);
  T* w = Data<T>(work);
  std::vector<T> tau(k);
  const lapack_int info = Lapack<T>::geqrf(LAPACK_ROW_MAJOR, m, n, w, n, tau.data());
  if (info < 0) return LapackError("geqrf", info);

  result.r = Matrix(k, n, a.dtype);
  T* r = Data<T>(result.r);
  // Cleared explicitly: Matrix's storage (std::max_align_t) can keep stale padding bytes.
  std::fill(r, r + k * n, T(0));
  for (int64_t i = 0; i < k; ++i) std::copy(w + i * n + i, w + (i + 1) * n, r + i * n + i);
  // The reflectors sit in the first k columns of `work`; orgqr reads them there through the
  // leading dimension n, so a wide matrix needs no repacking.
  const lapack_int q_info = Lapack<T>::orgqr(LAPACK_ROW_MAJOR, m, k, k, w, n, tau.data());
  if (q_info < 0) return LapackError("orgqr", q_info);
  result.q = Matrix(m, k, a.dtype);
  T* q = Data<T>(result.q);
  for (int64_t i = 0; i < m; ++i) std::copy(w + i * n, w + i * n + k, q + i * k);
  result.stats.flops = kFlopScale<T> * (HouseholderFlops(m, n) + HouseholderFlops(m, k));
  result.stats.bytes_moved = a.byte_size() + result.q.byte_size() + result.r.byte_size();
  if (rhs == nullptr) return result;

  // Least squares (m >= n, so k = n): x = R^-1 Q^H b. The explicit Q is orthonormal to working
  // precision, so Q^H b through gemm is as accurate as applying the reflectors again.
  for (int64_t j = 0; j < n; ++j) {
    if (r[j * n + j] == T(0)) {
      return absl::FailedPreconditionError(absl::StrCat("matrix does not have full column rank: R[",
                                                        j, ",", j, "] = 0 at column ", j,
                                                        "; cannot solve least squares"));
    }
  }
  const lapack_int nrhs = static_cast<lapack_int>(rhs->cols);
  Matrix x(n, nrhs, a.dtype);
  Gemm<T>(CblasConjTrans, CblasNoTrans, n, nrhs, m, T(1), q, k, rhs->As<T>().data(), nrhs, T(0),
          Data<T>(x), nrhs);
  SolveUpperTriangular<T>(n, nrhs, r, n, Data<T>(x), nrhs);
  result.stats.flops += kFlopScale<T> * (2.0 * m * n * nrhs + static_cast<double>(n) * n * nrhs);
  result.stats.bytes_moved += rhs->byte_size() + x.byte_size();
  result.solution = std::move(x);
  return result;
}

template <typename T>
absl::StatusOr<FactorizeResult> FactorizeTyped(const MatrixView& a, FactorizationKind kind,
                                               const MatrixView* rhs) {
  switch (kind) {
    case FactorizationKind::kLu:
      return Lu<T>(a, rhs);
    case FactorizationKind::kCholesky:
      return Cholesky<T>(a, rhs);
    case FactorizationKind::kQr:
      return Qr<T>(a, rhs);
  }
  return absl::InvalidArgumentError("unknown factorization kind");
}

// The checks that keep LAPACK inside its buffers; everything else is the caller's validation.
absl::Status CheckShapes(const MatrixView& a, FactorizationKind kind, const MatrixView* rhs) {
  constexpr int64_t kMaxDim = std::numeric_limits<lapack_int>::max();
  if (a.rows < 1 || a.cols < 1 || a.rows > kMaxDim || a.cols > kMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix has shape ", a.rows, "x", a.cols, "; LAPACK cannot take it"));
  }
  if (kind == FactorizationKind::kCholesky && a.rows != a.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix must be square for CHOLESKY, got ", a.rows, "x", a.cols));
  }
  if (rhs == nullptr) return absl::OkStatus();
  if (rhs->dtype != a.dtype || rhs->rows != a.rows || rhs->cols < 1 || rhs->cols > kMaxDim) {
    return absl::InvalidArgumentError(absl::StrCat("rhs is ", rhs->rows, "x", rhs->cols, " ",
                                                   DTypeName(rhs->dtype), "; want ", a.rows,
                                                   " rows of ", DTypeName(a.dtype)));
  }
  if (kind == FactorizationKind::kLu && a.rows != a.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix must be square for an LU solve, got ", a.rows, "x", a.cols));
  }
  if (kind == FactorizationKind::kQr && a.rows < a.cols) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix is ", a.rows, "x", a.cols, "; a QR solve needs rows >= cols (least squares)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, FactorizationKind kind,
                                          const MatrixView* rhs, JobControl* control) {
  if (IsCancelled(control)) return absl::CancelledError("factorization cancelled");
  if (!IsFloating(a.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix.dtype is ", DTypeName(a.dtype),
                     "; want float32, float64, complex64 or complex128"));
  }
  if (absl::Status s = CheckShapes(a, kind, rhs); !s.ok()) return s;
  switch (a.dtype) {
    case DType::kFloat32:
      return FactorizeTyped<float>(a, kind, rhs);
    case DType::kFloat64:
      return FactorizeTyped<double>(a, kind, rhs);
    case DType::kComplex64:
      return FactorizeTyped<std::complex<float>>(a, kind, rhs);
    case DType::kComplex128:
      return FactorizeTyped<std::complex<double>>(a, kind, rhs);
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("matrix.dtype ", DTypeName(a.dtype), " cannot be factorized"));
}

}  // namespace matrixd::cpu
