#include "core/multi_gpu/multi_gpu_factorize.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cuda/factorize_common.h"
#include "core/multi_gpu/cusolvermg_cholesky.h"
#include "core/multi_gpu/cusolvermg_lu.h"
#include "core/multi_gpu/cusolvermg_matrix.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The right-hand side on the factorization's grid, or nothing without one.
absl::StatusOr<std::optional<CusolverMgMatrix>> LoadRhs(CusolverMgGrid& grid, const MatrixView* rhs,
                                                        int64_t block) {
  if (rhs == nullptr) return std::nullopt;
  MATRIXD_ASSIGN_OR_RETURN(CusolverMgMatrix b,
                           CusolverMgMatrix::Create(grid, rhs->rows, rhs->cols, block));
  MATRIXD_RETURN_IF_ERROR(b.Scatter(*rhs));
  return std::optional<CusolverMgMatrix>(std::move(b));
}

// X from b into the caller's "solution" destination.
absl::Status GatherSolution(CusolverMgMatrix& b, const ResultDestinations& out,
                            FactorizeResult& result) {
  result.solution = cuda::HostMatrix<double>(out, "solution", b.rows(), b.cols());
  return b.Gather(reinterpret_cast<double*>(result.solution->mutable_bytes()), false);
}

absl::StatusOr<FactorizeResult> Lu(const std::vector<int>& devices, const MatrixView& a,
                                   const FactorizeOptions& options, const MatrixView* rhs,
                                   int64_t block) {
  const int64_t n = a.rows;
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<CusolverMgLu> lu,
                           CusolverMgLu::Create(devices, n, block, /*staging=*/true));
  MATRIXD_RETURN_IF_ERROR(lu->Load(a));
  MATRIXD_ASSIGN_OR_RETURN(std::optional<CusolverMgMatrix> b, LoadRhs(lu->grid(), rhs, block));
  const Clock::time_point start = Clock::now();
  MATRIXD_RETURN_IF_ERROR(lu->Factor());
  const double getrf_seconds = SecondsSince(start);

  FactorizeResult result;
  result.kind = FactorizationKind::kLu;
  result.lu = cuda::HostMatrix<double>(options.destinations, "lu", n, n);
  auto* factors = reinterpret_cast<double*>(result.lu.mutable_bytes());
  MATRIXD_RETURN_IF_ERROR(lu->GatherFactors(factors));
  // getrf's info, read where it is defined: the first exactly zero U[j, j].
  for (int64_t j = 0; j < n; ++j) {
    if (factors[j * n + j] == 0.0) {
      result.singular_column = j;
      break;
    }
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
  const double getrf_flops = cuda::LuFlops(nd, nd);
  result.stats.flops = getrf_flops + 2.0 * nd * nd * nrhs;
  result.stats.kernels.push_back(
      {"cusolvermg_getrf", getrf_seconds, 2 * a.byte_size(), getrf_flops});
  return result;
}

absl::StatusOr<FactorizeResult> Cholesky(const std::vector<int>& devices, const MatrixView& a,
                                         const FactorizeOptions& options, const MatrixView* rhs,
                                         int64_t block) {
  const int64_t n = a.rows;
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<CusolverMgCholesky> cholesky,
                           CusolverMgCholesky::Create(devices, n, block));
  MATRIXD_RETURN_IF_ERROR(cholesky->Load(a));
  MATRIXD_ASSIGN_OR_RETURN(std::optional<CusolverMgMatrix> b,
                           LoadRhs(cholesky->grid(), rhs, block));
  const Clock::time_point start = Clock::now();
  MATRIXD_ASSIGN_OR_RETURN(const int info, cholesky->Factor());
  const double potrf_seconds = SecondsSince(start);
  if (info > 0) return cuda::NotPositiveDefiniteError(info);

  FactorizeResult result;
  result.kind = FactorizationKind::kCholesky;
  result.l = cuda::HostMatrix<double>(options.destinations, "l", n, n);
  MATRIXD_RETURN_IF_ERROR(
      cholesky->GatherFactor(reinterpret_cast<double*>(result.l.mutable_bytes())));
  const double nd = static_cast<double>(n);
  const double nrhs = b.has_value() ? static_cast<double>(b->cols()) : 0.0;
  if (b.has_value()) {
    MATRIXD_RETURN_IF_ERROR(cholesky->Solve(*b));
    MATRIXD_RETURN_IF_ERROR(GatherSolution(*b, options.destinations, result));
  }
  // The single GPU's count: potrf n^3 / 6 multiply-adds, the solves n^2 / 2 each per column.
  const double potrf_flops = nd * nd * nd / 3.0;
  result.stats.flops = potrf_flops + 2.0 * nd * nd * nrhs;
  result.stats.kernels.push_back(
      {"cusolvermg_potrf", potrf_seconds, 2 * a.byte_size(), potrf_flops});
  return result;
}

}  // namespace

absl::StatusOr<FactorizeResult> MultiGpuFactorize(const std::vector<int>& devices,
                                                  const MatrixView& a,
                                                  const FactorizeOptions& options,
                                                  const MatrixView* rhs, int64_t block) {
  if (devices.empty() || a.dtype != DType::kFloat64 || a.rows != a.cols ||
      (rhs != nullptr && (rhs->dtype != DType::kFloat64 || rhs->rows != a.rows))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a factorization over several GPUs takes one square float64 matrix (and a float64 rhs "
        "of as many rows) on at least one GPU; got ",
        a.rows, "x", a.cols, " ", DTypeName(a.dtype), " on ", devices.size(), " GPUs"));
  }
  const Clock::time_point start = Clock::now();
  absl::StatusOr<FactorizeResult> result = options.kind == FactorizationKind::kCholesky
                                               ? Cholesky(devices, a, options, rhs, block)
                                               : Lu(devices, a, options, rhs, block);
  if (!result.ok()) return result;
  result->stats.seconds = SecondsSince(start);
  // The operands in, the factors and X out, each through a transpose on its GPU.
  result->stats.bytes_moved = 4 * a.byte_size() + (rhs != nullptr ? 4 * rhs->byte_size() : 0);
  return result;
}

uint64_t MultiGpuFactorizeDeviceBytesPerGpu(int64_t n, int64_t nrhs, int gpus, int64_t block) {
  const uint64_t a = CusolverMgMatrix::BytesPerGpu(n, n, block, gpus);
  const uint64_t b = nrhs > 0 ? CusolverMgMatrix::BytesPerGpu(n, nrhs, block, gpus) : 0;
  const uint64_t pivots = static_cast<uint64_t>(n) * sizeof(int);
  // cusolverMg's workspace, not known before its library is asked: a tenth of the part (it needs
  // a few blocks of columns in practice) and 64 MiB.
  const uint64_t workspace = a / 10 + (uint64_t{64} << 20);
  return a + b + pivots + workspace;
}

}  // namespace matrixd::multi_gpu
