#include "core/cuda/factorize.h"

#include <algorithm>
#include <complex>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/accuracy.h"
#include "core/cuda/condition.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/dense_kernels.h"
#include "core/cuda/device_span.h"
#include "core/cuda/factor_solves.h"
#include "core/cuda/factorize_batch.h"
#include "core/cuda/factorize_common.h"
#include "core/cuda/hermitian_device_check.h"
#include "core/cuda/kept_factorization.h"
#include "core/cuda/kernel_timer.h"
#include "core/cuda/library_types.h"
#include "core/cuda/norm_kernels.h"
#include "core/cuda/refine.h"
#include "core/factorization.h"
#include "core/refinement.h"
#include "core/validation.h"

// Layout: the host's row-major m x n array, read column-major (as cuSOLVER and cuBLAS do), is
// A^T. LU and QR need A itself in column-major order, so the matrix is transposed on the device
// after the upload and the factors are transposed back before the download
// (LaunchTranspose). Cholesky needs no transpose at all: see CholeskyOf.

namespace matrixd::cuda {
namespace {

// One int per library call's devInfo, downloaded together at the end.
enum InfoSlot { kFactorInfo, kSolveInfo, kApplyInfo, kGenerateInfo, kInfoSlots };

absl::Status CheckInfo(const std::vector<int>& info, InfoSlot slot, const char* routine) {
  if (info[slot] < 0) {
    return absl::InternalError(
        absl::StrCat(routine, " rejected its argument ", -info[slot], " (devInfo)"));
  }
  return absl::OkStatus();
}

template <typename T>
typename LibraryTraits<T>::Device* Ptr(const DeviceBuffer& buffer) {
  return static_cast<typename LibraryTraits<T>::Device*>(buffer.data());
}

// A column-major copy (leading dimension = rows) of the row-major host matrix `view`, through
// `staging` (row-major, at least view's size).
template <typename T>
absl::Status UploadColumnMajor(const MatrixView& view, DeviceBuffer& staging,
                               DeviceBuffer& column_major, DeviceContext& context) {
  MATRIXD_RETURN_IF_ERROR(context.Upload(view.data, staging, view.byte_size()));
  // The staging array read column-major is view^T (cols x rows, leading dimension cols).
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchTranspose(AsSpan<const T>(staging), view.cols, view.rows,
                                               view.cols, AsSpan<T>(column_major), view.rows,
                                               context.stream()));
  return absl::OkStatus();
}

// UploadColumnMajor that also takes ||view||_1 (the column sums of `column_major`) in the
// transpose's own pass, instead of a pass of their own before the factorization overwrites them.
template <typename T>
absl::StatusOr<DeviceOneNorm> UploadColumnMajorWithNorm(const MatrixView& view,
                                                        DeviceBuffer& staging,
                                                        DeviceBuffer& column_major,
                                                        DeviceContext& context) {
  MATRIXD_RETURN_IF_ERROR(context.Upload(view.data, staging, view.byte_size()));
  const int64_t partial_count = TransposeSumPartials(view.cols, view.rows);
  MATRIXD_ASSIGN_OR_RETURN(
      DeviceBuffer partials,
      context.Allocate(static_cast<size_t>(std::max<int64_t>(partial_count, 1)) * sizeof(double)));
  MATRIXD_ASSIGN_OR_RETURN(
      DeviceBuffer sums,
      context.Allocate(static_cast<size_t>(std::max<int64_t>(view.cols, 1)) * sizeof(double)));
  // staging read column-major is view^T (cols x rows); its row sums are view's column sums.
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchTransposeWithAbsSums(
      staging.as<const T>(), view.cols, view.rows, view.cols, column_major.as<T>(), view.rows,
      partials.as<double>(), sums.as<double>(), context.stream()));
  // `partials` goes back to the pool stream-ordered after the kernels that read it.
  return DeviceOneNorm::FromSums(std::move(sums), view.cols);
}

// FactorizeResult::accuracy from the estimate of an n x n factorized matrix whose 1-norm was
// queued before the factorization (rcond 0 without a solve when a pivot is exactly zero).
template <typename T>
absl::StatusOr<Accuracy> EstimateAccuracy(DeviceContext& context, int n, DeviceOneNorm& one_norm,
                                          bool singular, DeviceInverseApply solve,
                                          ComputeStats* stats) {
  double rcond = 0.0;
  if (!singular) {
    MATRIXD_ASSIGN_OR_RETURN(const double norm, one_norm.Value(context, stats));
    MATRIXD_ASSIGN_OR_RETURN(rcond, DeviceReciprocalCondition<T>(context, n, norm, solve, stats));
  }
  return FactorizationAccuracy(rcond, n, kRoundoffOf<typename LibraryTraits<T>::Real>);
}

// ---- LU ----

// getrf on A (m x n), getrs for A X = B. ipiv is LAPACK's: 1-based, row i swapped with row
// ipiv[i] in sequence; applying the same swaps to 0..m-1 gives the permutation with
// A[perm[i], :] = (L U)[i, :].
// With keep_on (square A only), the row-major factors stay on the device in result.kept instead
// of being downloaded.
template <typename T>
absl::StatusOr<FactorizeResult> LuOf(const MatrixView& a, const MatrixView* rhs, bool estimate,
                                     const ResultDestinations& out, DeviceContext& context,
                                     TransferChannel* keep_on) {
  using Traits = LibraryTraits<T>;
  const int m = static_cast<int>(a.rows);
  const int n = static_cast<int>(a.cols);
  const int k = std::min(m, n);
  const size_t elements = static_cast<size_t>(a.size());
  const cudaStream_t stream = context.stream();
  if (rhs != nullptr && m != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix is ", m, "x", n, "; an LU solve needs a square matrix"));
  }

  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer staging, context.Allocate(elements * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer factors, context.Allocate(elements * sizeof(T)));
  // ipiv[0, k), then one devInfo per call.
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer ints,
                           context.Allocate((static_cast<size_t>(k) + kInfoSlots) * sizeof(int)));
  int* ipiv = ints.as<int>();
  int* info = ipiv + k;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(info, 0, kInfoSlots * sizeof(int), stream));
  std::optional<DeviceOneNorm> one_norm;
  if (estimate) {
    absl::StatusOr<DeviceOneNorm> taken =
        UploadColumnMajorWithNorm<T>(a, staging, factors, context);
    if (!taken.ok()) return taken.status();
    one_norm.emplace(*std::move(taken));
  } else {
    MATRIXD_RETURN_IF_ERROR(UploadColumnMajor<T>(a, staging, factors, context));
  }

  int workspace_elements = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      Traits::getrf_buffer_size(context.cusolver(), m, n, Ptr<T>(factors), m, &workspace_elements));
  MATRIXD_ASSIGN_OR_RETURN(
      DeviceBuffer workspace,
      context.Allocate(static_cast<size_t>(std::max(workspace_elements, 1)) * sizeof(T)));
  absl::StatusOr<KernelTimer> getrf_timer = KernelTimer::Start(stream);
  MATRIXD_RETURN_IF_ERROR(getrf_timer.status());
  MATRIXD_CUDA_RETURN_IF_ERROR(Traits::getrf(context.cusolver(), m, n, Ptr<T>(factors), m,
                                             Ptr<T>(workspace), ipiv, info + kFactorInfo));
  MATRIXD_RETURN_IF_ERROR(getrf_timer->Stop());

  // The solve is queued before the factors' info is known: on a singular matrix it produces
  // Inf/NaN that are discarded, which costs less than a round trip to the host in between.
  DeviceBuffer rhs_staging;
  DeviceBuffer rhs_columns;
  int nrhs = 0;
  if (rhs != nullptr) {
    nrhs = static_cast<int>(rhs->cols);
    const size_t rhs_elements = static_cast<size_t>(rhs->size());
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer rhs_staging_new,
                             context.Allocate(rhs_elements * sizeof(T)));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer rhs_columns_new,
                             context.Allocate(rhs_elements * sizeof(T)));
    rhs_staging = std::move(rhs_staging_new);
    rhs_columns = std::move(rhs_columns_new);
    MATRIXD_RETURN_IF_ERROR(UploadColumnMajor<T>(*rhs, rhs_staging, rhs_columns, context));
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::getrs(context.cusolver(), CUBLAS_OP_N, n, nrhs,
                                               Ptr<T>(factors), m, ipiv, Ptr<T>(rhs_columns), n,
                                               info + kSolveInfo));
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchTranspose(AsSpan<const T>(rhs_columns), n, nrhs, n,
                                                 AsSpan<T>(rhs_staging), nrhs, stream));
  }
  // Back to row-major: the column-major m x n factors, transposed, read row-major.
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchTranspose(AsSpan<const T>(factors), m, n, m, AsSpan<T>(staging), n, stream));

  FactorizeResult result;
  result.kind = FactorizationKind::kLu;
  std::vector<int> host_ints(static_cast<size_t>(k) + kInfoSlots);
  MATRIXD_RETURN_IF_ERROR(context.Download(ints, host_ints.data(), host_ints.size() * sizeof(int)));
  const std::vector<int> host_info(host_ints.begin() + k, host_ints.end());
  MATRIXD_RETURN_IF_ERROR(CheckInfo(host_info, kFactorInfo, "cusolverDn<t>getrf"));
  MATRIXD_RETURN_IF_ERROR(CheckInfo(host_info, kSolveInfo, "cusolverDn<t>getrs"));
  if (host_info[kFactorInfo] > 0) result.singular_column = host_info[kFactorInfo] - 1;
  if (rhs != nullptr && result.singular_column.has_value()) {
    return SingularSolveError(*result.singular_column);
  }
  result.permutation.resize(static_cast<size_t>(m));
  std::iota(result.permutation.begin(), result.permutation.end(), int64_t{0});
  for (int i = 0; i < k; ++i) {
    std::swap(result.permutation[i], result.permutation[host_ints[i] - 1]);
  }
  if (keep_on == nullptr) {
    result.lu = HostMatrix<T>(out, "lu", m, n);
    MATRIXD_RETURN_IF_ERROR(
        context.Download(staging, result.lu.mutable_bytes(), result.lu.byte_size()));
  }
  if (rhs != nullptr) {
    result.solution = HostMatrix<T>(out, "solution", n, nrhs);
    MATRIXD_RETURN_IF_ERROR(context.Download(rhs_staging, result.solution->mutable_bytes(),
                                             result.solution->byte_size()));
  }

  result.stats.flops =
      kFlopsPerUpdate<T> / 2.0 * (LuFlops(m, n) + 2.0 * n * static_cast<double>(n) * nrhs);
  // Transfers, plus each transpose's read and write and the factorisation's own pass.
  result.stats.bytes_moved =
      (keep_on == nullptr ? 7 : 6) * a.byte_size() + (rhs != nullptr ? 6 * rhs->byte_size() : 0);
  MATRIXD_RETURN_IF_ERROR(getrf_timer->AppendTo(&result.stats, "cusolver_getrf", 2 * a.byte_size(),
                                                kFlopsPerUpdate<T> / 2.0 * LuFlops(m, n)));
  if (one_norm.has_value()) {
    // Solves with the factors (which the transposes above only read) and the pivots already
    // downloaded; none on a singular matrix, whose estimate is 0 without a solve.
    std::optional<DeviceFactorSolves<T>> solves;
    if (!result.singular_column.has_value()) {
      MATRIXD_ASSIGN_OR_RETURN(DeviceFactorSolves<T> lu,
                               DeviceFactorSolves<T>::Lu(
                                   context, factors.as<const T>(), n, m,
                                   std::span<const int>(host_ints.data(), static_cast<size_t>(k))));
      solves.emplace(std::move(lu));
    }
    auto solve = [&](bool adjoint, void* x, int columns) {
      return solves->Apply(adjoint, x, columns);
    };
    MATRIXD_ASSIGN_OR_RETURN(
        result.accuracy,
        EstimateAccuracy<T>(context, n, *one_norm, result.singular_column.has_value(),
                            DeviceInverseApply(solve), &result.stats));
  }
  if (keep_on != nullptr) {
    MATRIXD_ASSIGN_OR_RETURN(
        result.kept, KeepFactorization(FactorizationKind::kLu, n, a.dtype, std::move(staging),
                                       result.permutation, context, *keep_on));
  }
  return result;
}

// ---- Cholesky ----

// The row-major array read column-major is B = A^T = conj(A) for Hermitian A. potrf with UPPER
// gives B = U^H U and reads B's upper triangle, which is A's lower one. Then A = B^T = U^T
// conj(U) = L L^H with L = U^T, and U^T is exactly what the column-major factor reads as
// row-major. For A X = R: X^T A^T = R^T, i.e. X^T U^H U = R^T, and R^T, X^T are the row-major
// R, X read column-major: two right-side triangular solves in place, no transposes.
// With keep_on, L stays on the device in result.kept instead of being downloaded.
template <typename T>
absl::StatusOr<FactorizeResult> CholeskyOf(const MatrixView& a, const MatrixView* rhs,
                                           bool estimate, const ResultDestinations& out,
                                           DeviceContext& context, TransferChannel* keep_on) {
  using Traits = LibraryTraits<T>;
  if (a.rows != a.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix is ", a.rows, "x", a.cols, "; Cholesky needs a square matrix"));
  }
  const int n = static_cast<int>(a.rows);
  const cudaStream_t stream = context.stream();
  // Host operands were checked by the caller's validation (core/validation.h); a device operand
  // (a resident matrix) is checked where it lies.
  if (a.on_device()) {
    MATRIXD_RETURN_IF_ERROR(
        RequireHermitianOnDevice(reinterpret_cast<const T*>(a.data), n, 0, "matrix", context));
  }

  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer factor, context.Allocate(a.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer ints, context.Allocate(kInfoSlots * sizeof(int)));
  int* info = ints.as<int>();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(info, 0, kInfoSlots * sizeof(int), stream));
  MATRIXD_RETURN_IF_ERROR(context.Upload(a.data, factor, a.byte_size()));
  // ||B||_1 = ||A||_1 for B = conj(A), A Hermitian.
  std::optional<DeviceOneNorm> one_norm;
  if (estimate) {
    absl::StatusOr<DeviceOneNorm> queued =
        DeviceOneNorm::Queue(context, factor.as<const T>(), n, n, n,
                             /*upper_triangle=*/false);
    if (!queued.ok()) return queued.status();
    one_norm.emplace(*std::move(queued));
  }

  int workspace_elements = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(Traits::potrf_buffer_size(
      context.cusolver(), CUBLAS_FILL_MODE_UPPER, n, Ptr<T>(factor), n, &workspace_elements));
  MATRIXD_ASSIGN_OR_RETURN(
      DeviceBuffer workspace,
      context.Allocate(static_cast<size_t>(std::max(workspace_elements, 1)) * sizeof(T)));
  absl::StatusOr<KernelTimer> potrf_timer = KernelTimer::Start(stream);
  MATRIXD_RETURN_IF_ERROR(potrf_timer.status());
  MATRIXD_CUDA_RETURN_IF_ERROR(Traits::potrf(context.cusolver(), CUBLAS_FILL_MODE_UPPER, n,
                                             Ptr<T>(factor), n, Ptr<T>(workspace),
                                             workspace_elements, info + kFactorInfo));
  MATRIXD_RETURN_IF_ERROR(potrf_timer->Stop());

  DeviceBuffer solution;
  int nrhs = 0;
  if (rhs != nullptr) {
    nrhs = static_cast<int>(rhs->cols);
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer solution_new, context.Allocate(rhs->byte_size()));
    solution = std::move(solution_new);
    MATRIXD_RETURN_IF_ERROR(context.Upload(rhs->data, solution, rhs->byte_size()));
    const typename Traits::Device one = Traits::One();
    // Y U = R^T, then X^T U^H = Y. On a matrix that is not positive definite this computes
    // garbage that is discarded below.
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm(
        context.cublas(), CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
        CUBLAS_DIAG_NON_UNIT, nrhs, n, &one, Ptr<T>(factor), n, Ptr<T>(solution), nrhs));
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm(
        context.cublas(), CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, Traits::kAdjoint,
        CUBLAS_DIAG_NON_UNIT, nrhs, n, &one, Ptr<T>(factor), n, Ptr<T>(solution), nrhs));
  }
  // potrf leaves the other triangle as it was (A's upper triangle, row-major).
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchZeroStrictTriangle(AsSpan<T>(factor), n, n, Triangle::kUpper, stream));

  std::vector<int> host_info(kInfoSlots);
  MATRIXD_RETURN_IF_ERROR(context.Download(ints, host_info.data(), host_info.size() * sizeof(int)));
  MATRIXD_RETURN_IF_ERROR(CheckInfo(host_info, kFactorInfo, "cusolverDn<t>potrf"));
  if (host_info[kFactorInfo] > 0) {
    return NotPositiveDefiniteError(host_info[kFactorInfo]);
  }
  FactorizeResult result;
  result.kind = FactorizationKind::kCholesky;
  if (keep_on == nullptr) {
    result.l = HostMatrix<T>(out, "l", n, n);
    MATRIXD_RETURN_IF_ERROR(
        context.Download(factor, result.l.mutable_bytes(), result.l.byte_size()));
  }
  if (rhs != nullptr) {
    result.solution = HostMatrix<T>(out, "solution", n, nrhs);
    MATRIXD_RETURN_IF_ERROR(
        context.Download(solution, result.solution->mutable_bytes(), result.solution->byte_size()));
  }
  const double nd = n;
  // potrf: n^3 / 6 multiply-adds; the two triangular solves n^2 / 2 each per right-hand side.
  result.stats.flops = kFlopsPerUpdate<T> * (nd * nd * nd / 6.0 + nd * nd * nrhs);
  result.stats.bytes_moved =
      (keep_on == nullptr ? 4 : 3) * a.byte_size() + (rhs != nullptr ? 4 * rhs->byte_size() : 0);
  MATRIXD_RETURN_IF_ERROR(potrf_timer->AppendTo(&result.stats, "cusolver_potrf", 2 * a.byte_size(),
                                                kFlopsPerUpdate<T> * nd * nd * nd / 6.0));
  if (one_norm.has_value()) {
    // B = U^H U, U in the upper triangle (the zeroed lower one is not read).
    MATRIXD_ASSIGN_OR_RETURN(DeviceFactorSolves<T> solves,
                             DeviceFactorSolves<T>::Cholesky(context, factor.as<const T>(), n, n));
    auto solve = [&](bool adjoint, void* x, int columns) {
      return solves.Apply(adjoint, x, columns);
    };
    MATRIXD_ASSIGN_OR_RETURN(result.accuracy,
                             EstimateAccuracy<T>(context, n, *one_norm, /*singular=*/false,
                                                 DeviceInverseApply(solve), &result.stats));
  }
  if (keep_on != nullptr) {
    MATRIXD_ASSIGN_OR_RETURN(
        result.kept, KeepFactorization(FactorizationKind::kCholesky, n, a.dtype, std::move(factor),
                                       {}, context, *keep_on));
  }
  return result;
}

// ---- QR ----

// geqrf on A (m x n); R is read out of the upper triangle before orgqr/ungqr overwrites the
// reflectors with Q (m x k). The least-squares solve (m >= n) applies Q^H to B with ormqr/unmqr
// while the reflectors are still there, then solves R X = (Q^H B)[0:n, :] with trsm.
template <typename T>
absl::StatusOr<FactorizeResult> QrOf(const MatrixView& a, const MatrixView* rhs, bool estimate,
                                     const ResultDestinations& out, DeviceContext& context) {
  using Traits = LibraryTraits<T>;
  const int m = static_cast<int>(a.rows);
  const int n = static_cast<int>(a.cols);
  const int k = std::min(m, n);
  const size_t elements = static_cast<size_t>(a.size());
  const cudaStream_t stream = context.stream();
  if (rhs != nullptr && m < n) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix is ", m, "x", n, "; a QR solve needs rows >= cols (least squares)"));
  }

  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer staging, context.Allocate(elements * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer factors, context.Allocate(elements * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer tau, context.Allocate(static_cast<size_t>(k) * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer r,
                           context.Allocate(static_cast<size_t>(k) * n * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer ints, context.Allocate(kInfoSlots * sizeof(int)));
  int* info = ints.as<int>();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(info, 0, kInfoSlots * sizeof(int), stream));
  MATRIXD_RETURN_IF_ERROR(UploadColumnMajor<T>(a, staging, factors, context));

  DeviceBuffer rhs_staging;
  DeviceBuffer rhs_columns;
  int nrhs = 0;
  if (rhs != nullptr) {
    nrhs = static_cast<int>(rhs->cols);
    const size_t rhs_elements = static_cast<size_t>(rhs->size());
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer rhs_staging_new,
                             context.Allocate(rhs_elements * sizeof(T)));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer rhs_columns_new,
                             context.Allocate(rhs_elements * sizeof(T)));
    rhs_staging = std::move(rhs_staging_new);
    rhs_columns = std::move(rhs_columns_new);
    MATRIXD_RETURN_IF_ERROR(UploadColumnMajor<T>(*rhs, rhs_staging, rhs_columns, context));
  }

  int geqrf_elements = 0;
  int orgqr_elements = 0;
  int ormqr_elements = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      Traits::geqrf_buffer_size(context.cusolver(), m, n, Ptr<T>(factors), m, &geqrf_elements));
  MATRIXD_CUDA_RETURN_IF_ERROR(Traits::orgqr_buffer_size(
      context.cusolver(), m, k, k, Ptr<T>(factors), m, Ptr<T>(tau), &orgqr_elements));
  if (rhs != nullptr) {
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::ormqr_buffer_size(
        context.cusolver(), CUBLAS_SIDE_LEFT, Traits::kAdjoint, m, nrhs, k, Ptr<T>(factors), m,
        Ptr<T>(tau), Ptr<T>(rhs_columns), m, &ormqr_elements));
  }
  const int workspace_elements = std::max({geqrf_elements, orgqr_elements, ormqr_elements, 1});
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer workspace,
                           context.Allocate(static_cast<size_t>(workspace_elements) * sizeof(T)));

  absl::StatusOr<KernelTimer> geqrf_timer = KernelTimer::Start(stream);
  MATRIXD_RETURN_IF_ERROR(geqrf_timer.status());
  MATRIXD_CUDA_RETURN_IF_ERROR(Traits::geqrf(context.cusolver(), m, n, Ptr<T>(factors), m,
                                             Ptr<T>(tau), Ptr<T>(workspace), workspace_elements,
                                             info + kFactorInfo));
  MATRIXD_RETURN_IF_ERROR(geqrf_timer->Stop());
  // R: the first k rows of the column-major factors, upper triangle, as row-major k x n.
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchTranspose(AsSpan<const T>(factors), k, n, m, AsSpan<T>(r), n, stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchZeroStrictTriangle(AsSpan<T>(r), k, n, Triangle::kLower, stream));
  // The condition of R's leading k x k square, from the factors before ormqr and orgqr: solves
  // with the upper triangle (the reflectors below it are not read).
  std::optional<Accuracy> accuracy;
  ComputeStats estimate_stats;
  if (estimate) {
    MATRIXD_ASSIGN_OR_RETURN(DeviceOneNorm one_norm,
                             DeviceOneNorm::Queue(context, factors.as<const T>(), k, k, m,
                                                  /*upper_triangle=*/true));
    MATRIXD_ASSIGN_OR_RETURN(
        DeviceFactorSolves<T> solves,
        DeviceFactorSolves<T>::UpperTriangle(context, factors.as<const T>(), k, m));
    auto solve = [&](bool adjoint, void* x, int columns) {
      return solves.Apply(adjoint, x, columns);
    };
    MATRIXD_ASSIGN_OR_RETURN(accuracy,
                             EstimateAccuracy<T>(context, k, one_norm, /*singular=*/false,
                                                 DeviceInverseApply(solve), &estimate_stats));
  }

  if (rhs != nullptr) {
    MATRIXD_CUDA_RETURN_IF_ERROR(
        Traits::ormqr(context.cusolver(), CUBLAS_SIDE_LEFT, Traits::kAdjoint, m, nrhs, k,
                      Ptr<T>(factors), m, Ptr<T>(tau), Ptr<T>(rhs_columns), m, Ptr<T>(workspace),
                      workspace_elements, info + kApplyInfo));
    const typename Traits::Device one = Traits::One();
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm(
        context.cublas(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
        CUBLAS_DIAG_NON_UNIT, n, nrhs, &one, Ptr<T>(factors), m, Ptr<T>(rhs_columns), m));
    // X: the first n rows of the column-major result, as row-major n x nrhs.
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchTranspose(AsSpan<const T>(rhs_columns), n, nrhs, m,
                                                 AsSpan<T>(rhs_staging), nrhs, stream));
  }

  MATRIXD_CUDA_RETURN_IF_ERROR(Traits::orgqr(context.cusolver(), m, k, k, Ptr<T>(factors), m,
                                             Ptr<T>(tau), Ptr<T>(workspace), workspace_elements,
                                             info + kGenerateInfo));
  // Q: the first k columns, as row-major m x k (into the staging buffer, m n >= m k).
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchTranspose(AsSpan<const T>(factors), m, k, m, AsSpan<T>(staging), k, stream));

  std::vector<int> host_info(kInfoSlots);
  MATRIXD_RETURN_IF_ERROR(context.Download(ints, host_info.data(), host_info.size() * sizeof(int)));
  MATRIXD_RETURN_IF_ERROR(CheckInfo(host_info, kFactorInfo, "cusolverDn<t>geqrf"));
  MATRIXD_RETURN_IF_ERROR(CheckInfo(host_info, kApplyInfo, "cusolverDn<t>ormqr/unmqr"));
  MATRIXD_RETURN_IF_ERROR(CheckInfo(host_info, kGenerateInfo, "cusolverDn<t>orgqr/ungqr"));

  FactorizeResult result;
  result.kind = FactorizationKind::kQr;
  result.r = HostMatrix<T>(out, "r", k, n);
  MATRIXD_RETURN_IF_ERROR(context.Download(r, result.r.mutable_bytes(), result.r.byte_size()));
  if (rhs != nullptr) {
    // Like LAPACK's gels: an exactly zero diagonal entry of R means A lacks full column rank.
    const std::span<const T> r_values = result.r.As<T>();
    for (int j = 0; j < k; ++j) {
      if (r_values[static_cast<size_t>(j) * n + j] == T(0)) {
        return absl::FailedPreconditionError(
            absl::StrCat("matrix does not have full column rank: R[", j, ", ", j,
                         "] is exactly zero, so the least-squares solution is not unique"));
      }
    }
  }
  result.q = HostMatrix<T>(out, "q", m, k);
  MATRIXD_RETURN_IF_ERROR(
      context.Download(staging, result.q.mutable_bytes(), result.q.byte_size()));
  if (rhs != nullptr) {
    result.solution = HostMatrix<T>(out, "solution", n, nrhs);
    MATRIXD_RETURN_IF_ERROR(context.Download(rhs_staging, result.solution->mutable_bytes(),
                                             result.solution->byte_size()));
  }

  // The CPU backend's counts (LAPACK Working Note 41), so that both report the same work:
  // geqrf and orgqr twice getrf's multiply-adds each, the solve as Q^H B plus a triangular solve.
  const double nrhs_d = nrhs;
  result.stats.flops =
      kFlopsPerUpdate<T> / 2.0 *
      (2.0 * LuFlops(m, n) + 2.0 * LuFlops(m, k) + 2.0 * m * static_cast<double>(n) * nrhs_d +
       n * static_cast<double>(n) * nrhs_d);
  result.stats.bytes_moved = 8 * a.byte_size() + (rhs != nullptr ? 6 * rhs->byte_size() : 0);
  MATRIXD_RETURN_IF_ERROR(geqrf_timer->AppendTo(&result.stats, "cusolver_geqrf", 2 * a.byte_size(),
                                                kFlopsPerUpdate<T> * LuFlops(m, n)));
  if (accuracy.has_value()) {
    result.accuracy = accuracy;
    result.stats.flops += estimate_stats.flops;
    result.stats.bytes_moved += estimate_stats.bytes_moved;
    result.stats.kernels.insert(result.stats.kernels.end(), estimate_stats.kernels.begin(),
                                estimate_stats.kernels.end());
  }
  return result;
}

}  // namespace

absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                          const MatrixView* rhs, DeviceContext& context,
                                          JobControl* control, TransferChannel* keep_on) {
  if (IsCancelled(control)) return absl::CancelledError("factorization cancelled");
  const FactorizationKind kind = options.kind;
  if (!IsFloating(a.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix.dtype is ", std::string(DTypeName(a.dtype)),
                     "; want float32, float64, complex64 or complex128"));
  }
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (a.rows < 1 || a.cols < 1 || a.rows > kIntMax || a.cols > kIntMax) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix has shape ", a.rows, "x", a.cols, "; want 1 to 2^31-1 per side"));
  }
  if (rhs != nullptr) {
    if (rhs->dtype != a.dtype) {
      return absl::InvalidArgumentError(
          absl::StrCat("rhs.dtype is ", std::string(DTypeName(rhs->dtype)), "; want matrix.dtype ",
                       std::string(DTypeName(a.dtype))));
    }
    if (rhs->rows != a.rows || rhs->cols < 1 || rhs->cols > kIntMax) {
      return absl::InvalidArgumentError(absl::StrCat("rhs has shape ", rhs->rows, "x", rhs->cols,
                                                     "; want ", a.rows, " rows and >= 1 column"));
    }
  }
  if (options.batch_count < 0 || (options.batch_count > 0 && a.rows % options.batch_count != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix.rows = ", a.rows, " is not a multiple of batch_count = ", options.batch_count));
  }
  MATRIXD_RETURN_IF_ERROR(CheckEstimateCondition(
      options, options.batch_count > 0 ? a.rows / options.batch_count : a.rows, a.cols));
  MATRIXD_RETURN_IF_ERROR(CheckRefineOptions(options, rhs != nullptr));
  if (!KeepsOnDevice(a, options)) keep_on = nullptr;
  absl::StatusOr<FactorizeResult> result = [&]() -> absl::StatusOr<FactorizeResult> {
    if (options.refine.enabled) return RefinedLuSolve(a, *rhs, options.refine, context);
    if (options.batch_count > 0) return FactorizeBatch(a, options, rhs, context);
    return VisitFloatingType(a.dtype, [&](auto type) {
      using T = typename decltype(type)::type;
      switch (kind) {
        case FactorizationKind::kCholesky:
          return CholeskyOf<T>(a, rhs, options.estimate_condition, options.destinations, context,
                               keep_on);
        case FactorizationKind::kQr:
          return QrOf<T>(a, rhs, options.estimate_condition, options.destinations, context);
        case FactorizationKind::kLu:
        default:
          return LuOf<T>(a, rhs, options.estimate_condition, options.destinations, context,
                         keep_on);
      }
    });
  }();
  if (!result.ok()) {
    // FAILED_PRECONDITION and INVALID_ARGUMENT already say what is wrong with the input.
    if (result.status().code() == absl::StatusCode::kFailedPrecondition ||
        result.status().code() == absl::StatusCode::kInvalidArgument) {
      return result;
    }
    const std::string what = options.batch_count > 0
                                 ? absl::StrCat("a batch of ", options.batch_count, " ",
                                                a.rows / options.batch_count, "x", a.cols)
                                 : absl::StrCat("a ", a.rows, "x", a.cols);
    return absl::Status(
        result.status().code(),
        absl::StrCat(
            "cuda ", FactorizationName(kind), " of ", what, " ", std::string(DTypeName(a.dtype)),
            options.batch_count > 0 ? " matrices: " : " matrix: ", result.status().message()));
  }
  ReportProgress(control, 1.0);
  return result;
}

}  // namespace matrixd::cuda
