#include "core/cuda/refine.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/dense_kernels.h"
#include "core/cuda/device_span.h"
#include "core/cuda/factorize_common.h"
#include "core/cuda/kernel_timer.h"
#include "core/cuda/library_types.h"
#include "core/cuda/refine_kernels.h"
#include "core/refinement.h"

namespace matrixd::cuda {
namespace {

// The real component type of T and how many of them an element holds.
template <typename T>
struct Components {
  using Real = T;
  static constexpr int kParts = 1;
};
template <typename R>
struct Components<std::complex<R>> {
  using Real = R;
  static constexpr int kParts = 2;
};

template <typename T>
typename LibraryTraits<T>::Device* Ptr(const DeviceBuffer& buffer) {
  return static_cast<typename LibraryTraits<T>::Device*>(buffer.data());
}
template <typename T>
typename Components<T>::Real* Parts(const DeviceBuffer& buffer) {
  return static_cast<typename Components<T>::Real*>(buffer.data());
}

// cuSOLVER's IRS parameters and infos, owned.
class IrsParams {
 public:
  static absl::StatusOr<IrsParams> Create() {
    IrsParams params;
    MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnIRSParamsCreate(&params.handle_));
    return params;
  }
  IrsParams(IrsParams&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  IrsParams& operator=(IrsParams&&) = delete;
  ~IrsParams() {
    if (handle_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cusolverDnIRSParamsDestroy(handle_));
  }
  cusolverDnIRSParams_t get() const { return handle_; }

 private:
  IrsParams() = default;
  cusolverDnIRSParams_t handle_ = nullptr;
};

class IrsInfos {
 public:
  static absl::StatusOr<IrsInfos> Create() {
    IrsInfos infos;
    MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnIRSInfosCreate(&infos.handle_));
    return infos;
  }
  IrsInfos(IrsInfos&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  IrsInfos& operator=(IrsInfos&&) = delete;
  ~IrsInfos() {
    if (handle_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cusolverDnIRSInfosDestroy(handle_));
  }
  cusolverDnIRSInfos_t get() const { return handle_; }

 private:
  IrsInfos() = default;
  cusolverDnIRSInfos_t handle_ = nullptr;
};

// The IRS precisions: the input's (main) and the factorization's (lowest).
template <typename T>
cusolverPrecType_t MainPrecision() {
  if constexpr (std::is_same_v<T, float>) return CUSOLVER_R_32F;
  if constexpr (std::is_same_v<T, double>) return CUSOLVER_R_64F;
  if constexpr (std::is_same_v<T, std::complex<float>>) return CUSOLVER_C_32F;
  return CUSOLVER_C_64F;
}
cusolverPrecType_t LowestPrecision(RefinePrecision precision, bool complex) {
  switch (precision) {
    case RefinePrecision::kTf32:
      return complex ? CUSOLVER_C_TF32 : CUSOLVER_R_TF32;
    case RefinePrecision::kFloat16:
      return complex ? CUSOLVER_C_16F : CUSOLVER_R_16F;
    default:
      return complex ? CUSOLVER_C_32F : CUSOLVER_R_32F;
  }
}

// The operands on the device: A row-major (for the residual), B column-major, X column-major.
template <typename T>
struct System {
  int n = 0;
  int nrhs = 0;
  DeviceBuffer a_rows;
  DeviceBuffer b_columns;
  DeviceBuffer x_columns;
  DeviceBuffer residual;   // r, column-major n x nrhs
  DeviceBuffer row_norms;  // n doubles
  double a_norm = 0.0;
  double b_norm = 0.0;
};

// ||M||_inf of an n x nrhs column-major host array.
template <typename T>
double ColumnMajorInfNorm(const std::vector<T>& m, int n, int nrhs) {
  double norm = 0.0;
  for (int i = 0; i < n; ++i) {
    double row = 0.0;
    for (int c = 0; c < nrhs; ++c) row += std::abs(m[static_cast<size_t>(c) * n + i]);
    norm = std::max(norm, row);
  }
  return norm;
}

template <typename T>
absl::StatusOr<System<T>> UploadSystem(const MatrixView& a, const MatrixView& b,
                                       DeviceContext& context) {
  System<T> system;
  system.n = static_cast<int>(a.rows);
  system.nrhs = static_cast<int>(b.cols);
  const cudaStream_t stream = context.stream();
  MATRIXD_ASSIGN_OR_RETURN(system.a_rows, context.Allocate(a.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(system.b_columns, context.Allocate(b.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(system.x_columns, context.Allocate(b.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(system.residual, context.Allocate(b.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(system.row_norms,
                           context.Allocate(static_cast<size_t>(system.n) * sizeof(double)));
  MATRIXD_RETURN_IF_ERROR(context.Upload(a.data, system.a_rows, a.byte_size()));
  // B row-major through the residual buffer, then column-major into b_columns.
  MATRIXD_RETURN_IF_ERROR(context.Upload(b.data, system.residual, b.byte_size()));
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchTranspose(AsSpan<const T>(system.residual), b.cols, b.rows,
                                               b.cols, AsSpan<T>(system.b_columns), b.rows,
                                               stream));
  constexpr int kParts = Components<T>::kParts;
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchRowAbsSums(Parts<T>(system.a_rows), a.rows, a.cols, kParts,
                                                system.row_norms.template as<double>(), stream));
  std::vector<double> row_sums(static_cast<size_t>(system.n));
  MATRIXD_RETURN_IF_ERROR(
      context.Download(system.row_norms, row_sums.data(), row_sums.size() * sizeof(double)));
  system.a_norm = *std::max_element(row_sums.begin(), row_sums.end());
  // ||B||_inf the same way, from B's row-major copy still in the residual buffer (B may be in
  // device memory: a resident matrix).
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchRowAbsSums(Parts<T>(system.residual), b.rows, b.cols, kParts,
                                                system.row_norms.template as<double>(), stream));
  MATRIXD_RETURN_IF_ERROR(
      context.Download(system.row_norms, row_sums.data(), row_sums.size() * sizeof(double)));
  system.b_norm = *std::max_element(row_sums.begin(), row_sums.end());
  return system;
}

// r = B - A X in double-double; returns the backward error of X (downloaded into `x`).
template <typename T>
absl::StatusOr<double> BackwardErrorOf(System<T>& system, std::vector<T>& x,
                                       DeviceContext& context) {
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchRefineResidual(
      Parts<T>(system.a_rows), Parts<T>(system.x_columns), Parts<T>(system.b_columns),
      Parts<T>(system.residual), system.row_norms.template as<double>(), system.n, system.nrhs,
      Components<T>::kParts, context.stream()));
  std::vector<double> row_norms(static_cast<size_t>(system.n));
  MATRIXD_RETURN_IF_ERROR(
      context.Download(system.row_norms, row_norms.data(), row_norms.size() * sizeof(double)));
  x.resize(static_cast<size_t>(system.n) * system.nrhs);
  MATRIXD_RETURN_IF_ERROR(context.Download(system.x_columns, x.data(), x.size() * sizeof(T)));
  return BackwardError(*std::max_element(row_norms.begin(), row_norms.end()), system.a_norm,
                       ColumnMajorInfNorm(x, system.n, system.nrhs), system.b_norm);
}

// X (column-major on the device) as the row-major host solution.
template <typename T>
absl::StatusOr<Matrix> SolutionOf(const System<T>& system, DeviceContext& context) {
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchTranspose(AsSpan<const T>(system.x_columns), system.n,
                                               system.nrhs, system.n, AsSpan<T>(system.residual),
                                               system.nrhs, context.stream()));
  Matrix x(system.n, system.nrhs, DTypeOf<T>());
  MATRIXD_RETURN_IF_ERROR(context.Download(system.residual, x.mutable_bytes(), x.byte_size()));
  return x;
}

absl::Status Singular(int info) {
  const int k = info - 1;
  return absl::FailedPreconditionError(absl::StrCat(
      "matrix is singular: U[", k, ",", k, "] = 0 at column ", k, "; cannot solve A X = rhs"));
}

// Factors in T with getrf, solves with getrs, and refines with double-double residuals until
// core/refinement.h's RefineStoppingRule.
template <typename T>
absl::StatusOr<FactorizeResult> SamePrecision(const MatrixView& a, const MatrixView& b,
                                              const RefineOptions& options,
                                              DeviceContext& context) {
  using Traits = LibraryTraits<T>;
  MATRIXD_ASSIGN_OR_RETURN(System<T> system, UploadSystem<T>(a, b, context));
  const int n = system.n;
  const int nrhs = system.nrhs;
  const cudaStream_t stream = context.stream();
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer factors, context.Allocate(a.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer best_x, context.Allocate(b.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer ints,
                           context.Allocate((static_cast<size_t>(n) + 2) * sizeof(int)));
  int* ipiv = ints.as<int>();
  int* info = ipiv + n;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(info, 0, 2 * sizeof(int), stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchTranspose(AsSpan<const T>(system.a_rows), a.cols, a.rows,
                                               a.cols, AsSpan<T>(factors), a.rows, stream));
  int workspace_elements = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      Traits::getrf_buffer_size(context.cusolver(), n, n, Ptr<T>(factors), n, &workspace_elements));
  MATRIXD_ASSIGN_OR_RETURN(
      DeviceBuffer workspace,
      context.Allocate(static_cast<size_t>(std::max(workspace_elements, 1)) * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(KernelTimer getrf_timer, KernelTimer::Start(stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      Traits::getrf(context.cusolver(), n, n, Ptr<T>(factors), n, Ptr<T>(workspace), ipiv, info));
  MATRIXD_RETURN_IF_ERROR(getrf_timer.Stop());
  std::vector<int> host_ints(static_cast<size_t>(n) + 2);
  MATRIXD_RETURN_IF_ERROR(context.Download(ints, host_ints.data(), host_ints.size() * sizeof(int)));
  if (host_ints[n] < 0) {
    return absl::InternalError(
        absl::StrCat("cusolverDn<t>getrf rejected argument ", -host_ints[n]));
  }
  if (host_ints[n] > 0) return Singular(host_ints[n]);

  const auto solve = [&](const DeviceBuffer& rhs) -> absl::Status {
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::getrs(context.cusolver(), CUBLAS_OP_N, n, nrhs,
                                               Ptr<T>(factors), n, ipiv, Ptr<T>(rhs), n, info + 1));
    return absl::OkStatus();
  };
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(system.x_columns.data(), system.b_columns.data(),
                                               b.byte_size(), cudaMemcpyDeviceToDevice, stream));
  MATRIXD_RETURN_IF_ERROR(solve(system.x_columns));

  const double threshold = RefineThreshold(a.dtype, n, RefinePrecision::kInput);
  RefineStoppingRule rule(threshold, UnitRoundoff(a.dtype),
                          RefineIterations(options.max_iterations));
  const int64_t components = static_cast<int64_t>(n) * nrhs * Components<T>::kParts;
  std::vector<T> x;
  std::vector<T> correction(static_cast<size_t>(n) * nrhs);
  // The X of the smallest backward error (in best_x), returned if the loop ends above the
  // threshold with a worse one, as on the CPU.
  double best = std::numeric_limits<double>::infinity();
  double backward_error = best;
  while (true) {
    MATRIXD_ASSIGN_OR_RETURN(backward_error, BackwardErrorOf(system, x, context));
    if (backward_error < best) {
      best = backward_error;
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
          best_x.data(), system.x_columns.data(), b.byte_size(), cudaMemcpyDeviceToDevice, stream));
    }
    if (rule.Done(backward_error, ColumnMajorInfNorm(x, n, nrhs))) break;
    MATRIXD_RETURN_IF_ERROR(solve(system.residual));
    MATRIXD_RETURN_IF_ERROR(
        context.Download(system.residual, correction.data(), correction.size() * sizeof(T)));
    rule.Stepped(ColumnMajorInfNorm(correction, n, nrhs));
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchAddInPlace(Parts<T>(system.x_columns),
                                                  Parts<T>(system.residual), components, stream));
  }
  if (backward_error > threshold && best < backward_error) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(system.x_columns.data(), best_x.data(),
                                                 b.byte_size(), cudaMemcpyDeviceToDevice, stream));
    backward_error = best;
  }
  const int steps = rule.steps();

  FactorizeResult result;
  result.kind = FactorizationKind::kLu;
  MATRIXD_ASSIGN_OR_RETURN(Matrix solution, SolutionOf(system, context));
  result.solution = std::move(solution);
  // The factors back to row-major, through a_rows (A is no longer needed).
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchTranspose(AsSpan<const T>(factors), n, n, n, AsSpan<T>(system.a_rows), n, stream));
  result.lu = Matrix::ForOverwrite(n, n, a.dtype);  // downloaded in full
  MATRIXD_RETURN_IF_ERROR(
      context.Download(system.a_rows, result.lu.mutable_bytes(), result.lu.byte_size()));
  result.permutation.resize(static_cast<size_t>(n));
  std::iota(result.permutation.begin(), result.permutation.end(), int64_t{0});
  for (int i = 0; i < n; ++i)
    std::swap(result.permutation[i], result.permutation[host_ints[i] - 1]);
  result.refinement =
      Refinement{.iterations = steps,
                 .backward_error = backward_error,
                 .converged = backward_error <= threshold,
                 .threshold = threshold,
                 .factor_precision = RefinePrecisionName(RefinePrecision::kInput, a.dtype),
                 .fell_back = false};
  const double nd = n;
  result.stats.flops =
      kFlopsPerUpdate<T> / 2.0 * (LuFlops(nd, nd) + (steps + 1) * 4.0 * nd * nd * nrhs);
  result.stats.bytes_moved = 6 * a.byte_size() + (steps + 1) * (a.byte_size() + 4 * b.byte_size());
  MATRIXD_RETURN_IF_ERROR(getrf_timer.AppendTo(&result.stats, "cusolver_getrf", 2 * a.byte_size(),
                                               kFlopsPerUpdate<T> / 2.0 * LuFlops(nd, nd)));
  return result;
}

// cuSOLVER's IRS solver: factors in `precision`, refines classically to the input's precision,
// and falls back to a full-precision factorization by itself (niters < 0) when that fails.
template <typename T>
absl::StatusOr<FactorizeResult> Mixed(const MatrixView& a, const MatrixView& b,
                                      const RefineOptions& options, DeviceContext& context) {
  MATRIXD_ASSIGN_OR_RETURN(System<T> system, UploadSystem<T>(a, b, context));
  const int n = system.n;
  const int nrhs = system.nrhs;
  const cudaStream_t stream = context.stream();
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer a_columns, context.Allocate(a.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer info, context.Allocate(sizeof(int)));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(info.data(), 0, sizeof(int), stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchTranspose(AsSpan<const T>(system.a_rows), a.cols, a.rows,
                                               a.cols, AsSpan<T>(a_columns), a.rows, stream));

  MATRIXD_ASSIGN_OR_RETURN(IrsParams params, IrsParams::Create());
  MATRIXD_ASSIGN_OR_RETURN(IrsInfos infos, IrsInfos::Create());
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnIRSParamsSetSolverPrecisions(
      params.get(), MainPrecision<T>(), LowestPrecision(options.factor_precision, kIsComplex<T>)));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cusolverDnIRSParamsSetRefinementSolver(params.get(), CUSOLVER_IRS_REFINE_CLASSICAL));
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnIRSParamsEnableFallback(params.get()));
  if (options.max_iterations > 0) {
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cusolverDnIRSParamsSetMaxIters(params.get(), options.max_iterations));
  }
  size_t workspace_bytes = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cusolverDnIRSXgesv_bufferSize(context.cusolver(), params.get(), n, nrhs, &workspace_bytes));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer workspace,
                           context.Allocate(std::max<size_t>(workspace_bytes, 1)));
  MATRIXD_ASSIGN_OR_RETURN(KernelTimer timer, KernelTimer::Start(stream));
  int niters = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cusolverDnIRSXgesv(context.cusolver(), params.get(), infos.get(), n, nrhs, a_columns.data(),
                         n, system.b_columns.data(), n, system.x_columns.data(), n,
                         workspace.data(), workspace_bytes, &niters, info.as<int>()));
  MATRIXD_RETURN_IF_ERROR(timer.Stop());
  int host_info = 0;
  MATRIXD_RETURN_IF_ERROR(context.Download(info, &host_info, sizeof(int)));
  if (host_info < 0) {
    return absl::InternalError(absl::StrCat("cusolverDnIRSXgesv rejected argument ", -host_info));
  }
  if (host_info > 0) return Singular(host_info);

  std::vector<T> x;
  MATRIXD_ASSIGN_OR_RETURN(const double backward_error, BackwardErrorOf(system, x, context));
  // IRS reports no zero pivot in info (seen on the H100 with a zero matrix): a solution that is
  // not finite means the matrix is singular, or too close to it for either precision.
  if (!std::isfinite(backward_error)) {
    return absl::FailedPreconditionError(
        "matrix is singular (or too ill-conditioned): cuSOLVER's refined solve gave a "
        "non-finite X; cannot solve A X = rhs");
  }
  FactorizeResult result;
  result.kind = FactorizationKind::kLu;
  MATRIXD_ASSIGN_OR_RETURN(Matrix solution, SolutionOf(system, context));
  result.solution = std::move(solution);
  const bool fell_back = niters < 0;
  const double threshold = RefineThreshold(a.dtype, n, options.factor_precision);
  result.refinement = Refinement{
      .iterations = std::max(niters, 0),
      .backward_error = backward_error,
      .converged = backward_error <= threshold,
      .threshold = threshold,
      .factor_precision = fell_back ? std::string(DTypeName(a.dtype))
                                    : RefinePrecisionName(options.factor_precision, a.dtype),
      .fell_back = fell_back};
  if (!fell_back) result.stats.precision = result.refinement->factor_precision + " factors";
  const double nd = n;
  const double steps = std::max(niters, 0) + 1;
  result.stats.flops = kFlopsPerUpdate<T> / 2.0 *
                       ((fell_back ? 2.0 : 1.0) * LuFlops(nd, nd) + steps * 4.0 * nd * nd * nrhs);
  result.stats.bytes_moved = 6 * a.byte_size() + steps * (a.byte_size() + 4 * b.byte_size());
  MATRIXD_RETURN_IF_ERROR(timer.AppendTo(&result.stats, "cusolver_irs_gesv", steps * a.byte_size(),
                                         result.stats.flops));
  return result;
}

}  // namespace

absl::StatusOr<FactorizeResult> RefinedLuSolve(const MatrixView& a, const MatrixView& b,
                                               const RefineOptions& options,
                                               DeviceContext& context) {
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (!IsFloating(a.dtype) || b.dtype != a.dtype || a.rows != a.cols || a.rows < 1 ||
      a.rows > kIntMax || b.rows != a.rows || b.cols < 1 || b.cols > kIntMax) {
    return absl::InvalidArgumentError(absl::StrCat(
        "refine needs a square floating matrix and an rhs of its dtype with as many rows, got ",
        a.rows, "x", a.cols, " ", DTypeName(a.dtype), " and ", b.rows, "x", b.cols, " ",
        DTypeName(b.dtype)));
  }
  return VisitFloatingType(a.dtype, [&](auto type) -> absl::StatusOr<FactorizeResult> {
    using T = typename decltype(type)::type;
    if (IsMixedPrecision(options.factor_precision, a.dtype))
      return Mixed<T>(a, b, options, context);
    return SamePrecision<T>(a, b, options, context);
  });
}

}  // namespace matrixd::cuda
