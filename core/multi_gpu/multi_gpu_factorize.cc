#include "core/multi_gpu/multi_gpu_factorize.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cuda/factorize_common.h"
#include "core/cuda/library_types.h"
#include "core/multi_gpu/cusolvermg_cholesky.h"
#include "core/multi_gpu/cusolvermg_lu.h"
#include "core/multi_gpu/cusolvermg_matrix.h"
#include "core/multi_gpu/kept_factorization.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Real operations per multiply-add of the dtype: 2, or 8 for complex numbers.
double FlopsPerUpdate(DType dtype) { return IsComplex(dtype) ? 8.0 : 2.0; }

// getrf's info, read where it is defined: the first exactly zero U[j, j] among `count` entries
// `stride` elements apart (the diagonal of row-major packed factors, or the diagonal itself).
std::optional<int64_t> FirstZeroPivot(const std::byte* entries, int64_t count, int64_t stride,
                                      DType dtype) {
  return cuda::VisitFloatingType(dtype, [&](auto type) -> std::optional<int64_t> {
    using T = typename decltype(type)::type;
    const auto* values = reinterpret_cast<const T*>(entries);
    for (int64_t j = 0; j < count; ++j) {
      if (values[j * stride] == T(0)) return j;
    }
    return std::nullopt;
  });
}

// The same, read from the factors left on the GPUs: their diagonal only comes to the host.
absl::StatusOr<std::optional<int64_t>> FirstZeroPivotOnGpus(CusolverMgMatrix& factors) {
  Matrix diagonal(1, factors.rows(), factors.dtype());
  MATRIXD_RETURN_IF_ERROR(factors.Diagonal(diagonal.mutable_bytes()));
  return FirstZeroPivot(diagonal.bytes(), factors.rows(), 1, factors.dtype());
}

// cusolverMg's workspace on a GPU holding `part` bytes of A, not known before its library is
// asked: a tenth of the part (it needs a few blocks of columns in practice) and 64 MiB.
uint64_t WorkspaceAllowance(uint64_t part) { return part / 10 + (uint64_t{64} << 20); }

// Backend device indices 0 .. gpus - 1: the GPUs of a factorization over the first `gpus`.
std::vector<int> FirstIndices(size_t gpus) {
  std::vector<int> indices(gpus);
  std::iota(indices.begin(), indices.end(), 0);
  return indices;
}

// The right-hand side on the factorization's grid, or nothing without one.
absl::StatusOr<std::optional<CusolverMgMatrix>> LoadRhs(CusolverMgGrid& grid, const MatrixView* rhs,
                                                        int64_t block) {
  if (rhs == nullptr) return std::nullopt;
  MATRIXD_ASSIGN_OR_RETURN(CusolverMgMatrix b,
                           CusolverMgMatrix::Create(grid, rhs->rows, rhs->cols, rhs->dtype, block));
  MATRIXD_RETURN_IF_ERROR(b.Scatter(*rhs));
  return std::optional<CusolverMgMatrix>(std::move(b));
}

// X from b into the caller's "solution" destination.
absl::Status GatherSolution(CusolverMgMatrix& b, const ResultDestinations& out,
                            FactorizeResult& result) {
  result.solution = out.MakeForOverwrite("solution", b.rows(), b.cols(), b.dtype());
  return b.Gather(result.solution->mutable_bytes(), false);
}

absl::StatusOr<FactorizeResult> Lu(const std::vector<int>& devices, const MatrixView& a,
                                   const FactorizeOptions& options, const MatrixView* rhs,
                                   int64_t block) {
  const int64_t n = a.rows;
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<CusolverMgLu> lu,
                           CusolverMgLu::Create(devices, n, block, /*staging=*/true, a.dtype));
  MATRIXD_RETURN_IF_ERROR(lu->Load(a));
  MATRIXD_ASSIGN_OR_RETURN(std::optional<CusolverMgMatrix> b, LoadRhs(lu->grid(), rhs, block));
  const Clock::time_point start = Clock::now();
  MATRIXD_RETURN_IF_ERROR(lu->Factor());
  const double getrf_seconds = SecondsSince(start);

  FactorizeResult result;
  result.kind = FactorizationKind::kLu;
  if (options.keep_on_devices) {
    MATRIXD_ASSIGN_OR_RETURN(result.singular_column, FirstZeroPivotOnGpus(lu->factors()));
  } else {
    result.lu = options.destinations.MakeForOverwrite("lu", n, n, a.dtype);
    MATRIXD_RETURN_IF_ERROR(lu->GatherFactors(result.lu.mutable_bytes()));
    result.singular_column = FirstZeroPivot(result.lu.bytes(), n, n + 1, a.dtype);
  }
  if (b.has_value() && result.singular_column.has_value()) {
    return cuda::SingularSolveError(*result.singular_column);
  }
  MATRIXD_ASSIGN_OR_RETURN(result.permutation, lu->Permutation());
  const double nd = static_cast<double>(n);
  const double nrhs = b.has_value() ? static_cast<double>(b->cols()) : 0.0;
  if (b.has_value()) {
    MATRIXD_RETURN_IF_ERROR(lu->Solve(*b));
    MATRIXD_RETURN_IF_ERROR(GatherSolution(*b, options.destinations, result));
  }
  // The single GPU's count: getrf's multiply-adds, the two triangular solves n^2 / 2 each per
  // column.
  const double per_update = FlopsPerUpdate(a.dtype);
  const double getrf_flops = per_update / 2.0 * cuda::LuFlops(nd, nd);
  result.stats.flops = getrf_flops + per_update * nd * nd * nrhs;
  result.stats.kernels.push_back(
      {"cusolvermg_getrf", getrf_seconds, 2 * a.byte_size(), getrf_flops});
  if (options.keep_on_devices) {
    b.reset();  // on the grid the kept factorization takes
    MATRIXD_ASSIGN_OR_RETURN(result.kept, KeepLu(std::move(lu), FirstIndices(devices.size())));
  }
  return result;
}

absl::StatusOr<FactorizeResult> Cholesky(const std::vector<int>& devices, const MatrixView& a,
                                         const FactorizeOptions& options, const MatrixView* rhs,
                                         int64_t block) {
  const int64_t n = a.rows;
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<CusolverMgCholesky> cholesky,
                           CusolverMgCholesky::Create(devices, n, block, a.dtype));
  MATRIXD_RETURN_IF_ERROR(cholesky->Load(a));
  MATRIXD_ASSIGN_OR_RETURN(std::optional<CusolverMgMatrix> b,
                           LoadRhs(cholesky->grid(), rhs, block));
  const Clock::time_point start = Clock::now();
  MATRIXD_ASSIGN_OR_RETURN(const int info, cholesky->Factor());
  const double potrf_seconds = SecondsSince(start);
  if (info > 0) return cuda::NotPositiveDefiniteError(info);

  FactorizeResult result;
  result.kind = FactorizationKind::kCholesky;
  if (!options.keep_on_devices) {
    result.l = options.destinations.MakeForOverwrite("l", n, n, a.dtype);
    MATRIXD_RETURN_IF_ERROR(cholesky->GatherFactor(result.l.mutable_bytes()));
  }
  const double nd = static_cast<double>(n);
  const double nrhs = b.has_value() ? static_cast<double>(b->cols()) : 0.0;
  if (b.has_value()) {
    MATRIXD_RETURN_IF_ERROR(cholesky->Solve(*b));
    MATRIXD_RETURN_IF_ERROR(GatherSolution(*b, options.destinations, result));
  }
  // The single GPU's count: potrf n^3 / 6 multiply-adds, the solves n^2 / 2 each per column.
  const double per_update = FlopsPerUpdate(a.dtype);
  const double potrf_flops = per_update * nd * nd * nd / 6.0;
  result.stats.flops = potrf_flops + per_update * nd * nd * nrhs;
  result.stats.kernels.push_back(
      {"cusolvermg_potrf", potrf_seconds, 2 * a.byte_size(), potrf_flops});
  if (options.keep_on_devices) {
    b.reset();  // on the grid the kept factorization takes
    MATRIXD_ASSIGN_OR_RETURN(result.kept,
                             KeepCholesky(std::move(cholesky), FirstIndices(devices.size())));
  }
  return result;
}

}  // namespace

absl::StatusOr<FactorizeResult> MultiGpuFactorize(const std::vector<int>& devices,
                                                  const MatrixView& a,
                                                  const FactorizeOptions& options,
                                                  const MatrixView* rhs, int64_t block) {
  if (devices.empty() || !IsFloating(a.dtype) || a.rows != a.cols ||
      (rhs != nullptr && (rhs->dtype != a.dtype || rhs->rows != a.rows))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a factorization over several GPUs takes one square float32, float64, complex64 or "
        "complex128 matrix (and an rhs of its dtype and rows) on at least one GPU; got ",
        a.rows, "x", a.cols, " ", DTypeName(a.dtype),
        rhs != nullptr ? absl::StrCat(" with a ", rhs->rows, "x", rhs->cols, " ",
                                      DTypeName(rhs->dtype), " rhs")
                       : "",
        " on ", devices.size(), " GPUs"));
  }
  const Clock::time_point start = Clock::now();
  absl::StatusOr<FactorizeResult> result = options.kind == FactorizationKind::kCholesky
                                               ? Cholesky(devices, a, options, rhs, block)
                                               : Lu(devices, a, options, rhs, block);
  if (!result.ok()) return result;
  result->stats.seconds = SecondsSince(start);
  // The operands in, the factors (unless kept) and X out, each through a transpose on its GPU.
  result->stats.bytes_moved = (result->kept != nullptr ? 2 : 4) * a.byte_size() +
                              (rhs != nullptr ? 4 * rhs->byte_size() : 0);
  return result;
}

uint64_t MultiGpuFactorizeDeviceBytesPerGpu(int64_t n, int64_t nrhs, int gpus, int64_t block,
                                            size_t element_size) {
  const uint64_t a = CusolverMgMatrix::BytesPerGpu(n, n, block, gpus, element_size);
  const uint64_t b =
      nrhs > 0 ? CusolverMgMatrix::BytesPerGpu(n, nrhs, block, gpus, element_size) : 0;
  const uint64_t pivots = static_cast<uint64_t>(n) * sizeof(int);
  return a + b + pivots + WorkspaceAllowance(a);
}

uint64_t MultiGpuSolveDeviceBytesPerGpu(int64_t n, int64_t nrhs, int gpus, int64_t block,
                                        size_t element_size) {
  return CusolverMgMatrix::BytesPerGpu(n, nrhs, block, gpus, element_size) +
         WorkspaceAllowance(CusolverMgMatrix::BytesPerGpu(n, n, block, gpus, element_size));
}

}  // namespace matrixd::multi_gpu
