#include "core/cuda/solve.h"

#include <complex>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/device_operand.h"
#include "core/cuda/factorize_common.h"
#include "core/cuda/kernel_timer.h"
#include "core/cuda/library_types.h"
#include "core/cuda/resident_matrix.h"
#include "core/cuda/solve_kernels.h"
#include "core/device_factorization.h"
#include "core/factorization.h"

// Layout: every kept matrix is row-major, and a row-major matrix read column-major (as cuBLAS
// reads it) is its transpose. So the solve is written for X^T, which is the row-major X read
// column-major: op(A) X = B becomes X^T op(A)^T = B^T, right-side triangular solves on the
// factors as they lie.
//   LU (P A = L U, (P A)[i, :] = A[perm[i], :]): the kept packed factors read column-major are
//   M = (L\U)^T, whose upper triangle is L^T (unit) and lower one U^T. A X = B: gather W = P B,
//   then X^T U^T L^T = W^T, two trsm. A^T X = B (A^H alike, with conjugates): U^T L^T (P X) = B,
//   so V^T U = B^T and Z^T L = V^T by trsm with op T on M, then scatter X = P^T Z.
//   Cholesky (A = L L^H): M = L^T, A^T = M^H M, so X^T M^H M = B^T: two trsm (as Factorize).
//   QR (A = Q R, m >= n): X^T = B^T conj(Q) R^-T: one gemm with Q read column-major as Q^T, and a
//   trsm with R^T (lower).

namespace matrixd::cuda {
namespace {

cublasOperation_t OpOf(SolveTranspose transpose) {
  switch (transpose) {
    case SolveTranspose::kTranspose:
      return CUBLAS_OP_T;
    case SolveTranspose::kConjugateTranspose:
      return CUBLAS_OP_C;  // the plain transpose for real types
    case SolveTranspose::kNone:
      break;
  }
  return CUBLAS_OP_N;
}

template <typename T>
typename LibraryTraits<T>::Device* Mutable(void* data) {
  return static_cast<typename LibraryTraits<T>::Device*>(data);
}
template <typename T>
const typename LibraryTraits<T>::Device* Const(const void* data) {
  return static_cast<const typename LibraryTraits<T>::Device*>(data);
}

template <typename T>
typename LibraryTraits<T>::Device MinusOne() {
  typename LibraryTraits<T>::Device minus_one{};
  if constexpr (kIsComplex<T>) {
    minus_one.x = -1;
  } else {
    minus_one = -1;
  }
  return minus_one;
}

template <typename T>
absl::StatusOr<SolveResult> SolveOf(const FactorizationView& f, const MatrixView& rhs,
                                    const SolveOptions& options, DeviceContext& context) {
  using Traits = LibraryTraits<T>;
  const int m = static_cast<int>(f.rows());
  const int n = static_cast<int>(f.cols());
  const int nrhs = static_cast<int>(rhs.cols);
  const cudaStream_t stream = context.stream();
  const cublasHandle_t cublas = context.cublas();
  const typename Traits::Device one = Traits::One();
  const size_t x_bytes = static_cast<size_t>(n) * nrhs * sizeof(T);

  MATRIXD_ASSIGN_OR_RETURN(DeviceOperand factor, OnDevice(f.factor, context));
  MATRIXD_ASSIGN_OR_RETURN(DeviceOperand b, OnDevice(rhs, context));
  SolveResult result;
  void* x = InPlaceOutput(options.output, x_bytes, rhs.dtype, context);
  DeviceBuffer x_buffer;
  if (x == nullptr) {
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer buffer, context.Allocate(x_bytes));
    x_buffer = std::move(buffer);
    x = x_buffer.data();
  }
  const auto* m_factor = Const<T>(factor.data);
  auto* x_t = Mutable<T>(x);

  absl::StatusOr<KernelTimer> timer = KernelTimer::Start(stream);
  MATRIXD_RETURN_IF_ERROR(timer.status());
  switch (f.kind) {
    case FactorizationKind::kLu: {
      MATRIXD_ASSIGN_OR_RETURN(DeviceOperand permutation, OnDevice(f.permutation, context));
      const auto* perm = static_cast<const int64_t*>(permutation.data);
      if (options.transpose == SolveTranspose::kNone) {
        MATRIXD_CUDA_RETURN_IF_ERROR(LaunchPermuteRows(b.data, x, perm, n, nrhs, sizeof(T),
                                                       RowPermutation::kGather, stream));
        MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm(cublas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER,
                                                  CUBLAS_OP_N, CUBLAS_DIAG_UNIT, nrhs, n, &one,
                                                  m_factor, n, x_t, nrhs));
        MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm(cublas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER,
                                                  CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, nrhs, n, &one,
                                                  m_factor, n, x_t, nrhs));
        break;
      }
      const cublasOperation_t op = OpOf(options.transpose);
      MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer work, context.Allocate(x_bytes));
      MATRIXD_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(work.data(), b.data, x_bytes, cudaMemcpyDeviceToDevice, stream));
      auto* z = Mutable<T>(work.data());
      MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm(cublas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER,
                                                op, CUBLAS_DIAG_NON_UNIT, nrhs, n, &one, m_factor,
                                                n, z, nrhs));
      MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm(cublas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER,
                                                op, CUBLAS_DIAG_UNIT, nrhs, n, &one, m_factor, n, z,
                                                nrhs));
      MATRIXD_CUDA_RETURN_IF_ERROR(LaunchPermuteRows(work.data(), x, perm, n, nrhs, sizeof(T),
                                                     RowPermutation::kScatter, stream));
      break;
    }
    case FactorizationKind::kCholesky:
      MATRIXD_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(x, b.data, x_bytes, cudaMemcpyDeviceToDevice, stream));
      MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm(cublas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER,
                                                CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, nrhs, n, &one,
                                                m_factor, n, x_t, nrhs));
      MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm(cublas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER,
                                                Traits::kAdjoint, CUBLAS_DIAG_NON_UNIT, nrhs, n,
                                                &one, m_factor, n, x_t, nrhs));
      break;
    case FactorizationKind::kQr: {
      MATRIXD_ASSIGN_OR_RETURN(DeviceOperand r, OnDevice(f.r, context));
      const typename Traits::Device zero = Traits::Zero();
      // k = n: Q read column-major is Q^T (n x m, leading dimension n).
      MATRIXD_CUDA_RETURN_IF_ERROR(Traits::gemm(cublas, CUBLAS_OP_N, Traits::kAdjoint, nrhs, n, m,
                                                &one, Const<T>(b.data), nrhs, m_factor, n, &zero,
                                                x_t, nrhs));
      MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm(cublas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER,
                                                CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, nrhs, n, &one,
                                                Const<T>(r.data), n, x_t, nrhs));
      break;
    }
  }
  MATRIXD_RETURN_IF_ERROR(timer->Stop());

  if (options.residual) {
    // R^T = B^T - X^T op(A)^T, with A read column-major as A^T (leading dimension n).
    MATRIXD_ASSIGN_OR_RETURN(DeviceOperand a, OnDevice(f.input, context));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer residual, context.Allocate(rhs.byte_size()));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(residual.data(), b.data, rhs.byte_size(),
                                                 cudaMemcpyDeviceToDevice, stream));
    const int inner = options.transpose == SolveTranspose::kNone ? n : m;
    const typename Traits::Device minus_one = MinusOne<T>();
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::gemm(
        cublas, CUBLAS_OP_N, OpOf(options.transpose), nrhs, static_cast<int>(rhs.rows), inner,
        &minus_one, x_t, nrhs, Const<T>(a.data), n, &one, Mutable<T>(residual.data()), nrhs));
    // nrm2 with the handle's default host pointer mode waits for its result.
    using Real = typename Traits::Real;
    Real norms[4] = {};
    const std::pair<const void*, int64_t> vectors[4] = {{residual.data(), rhs.size()},
                                                        {a.data, f.input.size()},
                                                        {x, static_cast<int64_t>(n) * nrhs},
                                                        {b.data, rhs.size()}};
    for (int i = 0; i < 4; ++i) {
      MATRIXD_CUDA_RETURN_IF_ERROR(Traits::nrm2(cublas, static_cast<int>(vectors[i].second),
                                                Const<T>(vectors[i].first), 1, &norms[i]));
    }
    const double scale = static_cast<double>(norms[1]) * norms[2] + norms[3];
    result.residual = scale > 0 ? norms[0] / scale : 0.0;
  }
  if (x_buffer.data() != nullptr) {
    result.x = Matrix::ForOverwrite(n, nrhs, rhs.dtype);  // downloaded in full
    MATRIXD_RETURN_IF_ERROR(context.Download(x_buffer, result.x.mutable_bytes(), x_bytes));
  } else {
    MATRIXD_RETURN_IF_ERROR(context.Synchronize());
  }

  result.stats.flops = SolveFlops(f, nrhs, options.residual);
  result.stats.bytes_moved = f.factor.byte_size() + f.r.byte_size() + f.permutation.byte_size() +
                             rhs.byte_size() + 2 * x_bytes +
                             (options.residual ? f.input.byte_size() + 3 * rhs.byte_size() : 0);
  MATRIXD_RETURN_IF_ERROR(timer->AppendTo(&result.stats, "solve", result.stats.bytes_moved,
                                          SolveFlops(f, nrhs, false)));
  return result;
}

}  // namespace

absl::StatusOr<SolveResult> Solve(const FactorizationView& kept, const MatrixView& rhs,
                                  const SolveOptions& options, DeviceContext& context,
                                  JobControl* control) {
  if (IsCancelled(control)) return absl::CancelledError("solve cancelled");
  // One kept whole on a device is its parts' device views there (kept_factorization.h).
  const FactorizationView factorization = WithKeptParts(kept);
  MATRIXD_RETURN_IF_ERROR(CheckSolve(factorization, rhs, options));
  if (factorization.kept != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("factorization: kept in parts on ", factorization.kept->Parts().size(),
                     " GPUs; only the backend over those GPUs solves with it"));
  }
  if (factorization.batch_count > 0) {
    return SolveEachMember(
        factorization, rhs, options, control,
        [&context](const FactorizationView& member, const MatrixView& b, const SolveOptions& o) {
          return Solve(member, b, o, context, /*control=*/nullptr);
        });
  }
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (factorization.rows() > kIntMax || factorization.cols() > kIntMax || rhs.cols > kIntMax ||
      rhs.size() > kIntMax || factorization.input.size() > kIntMax) {
    return absl::InvalidArgumentError(absl::StrCat("solve of ", factorization.rows(), "x",
                                                   factorization.cols(), " with ", rhs.cols,
                                                   " right-hand sides exceeds cuBLAS's int range"));
  }
  absl::StatusOr<SolveResult> result = VisitFloatingType(rhs.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    return SolveOf<T>(factorization, rhs, options, context);
  });
  if (!result.ok()) {
    if (result.status().code() == absl::StatusCode::kInvalidArgument) return result;
    return absl::Status(result.status().code(),
                        absl::StrCat("cuda solve with the ", FactorizationName(factorization.kind),
                                     " of a ", factorization.rows(), "x", factorization.cols(), " ",
                                     DTypeName(rhs.dtype), " matrix: ", result.status().message()));
  }
  ReportProgress(control, 1.0);
  return result;
}

uint64_t SolveDeviceBytes(const FactorizationView& kept, const MatrixView& rhs,
                          const SolveOptions& options) {
  const FactorizationView factorization = WithKeptParts(kept);
  const auto copied = [](const MatrixView& view) -> uint64_t {
    return view.on_device() ? 0 : view.byte_size();
  };
  const uint64_t x_bytes = static_cast<uint64_t>(factorization.cols()) *
                           static_cast<uint64_t>(rhs.cols) * ElementSize(rhs.dtype);
  uint64_t bytes = copied(factorization.factor) + copied(factorization.r) +
                   copied(factorization.permutation) + copied(rhs) + x_bytes;
  if (options.transpose != SolveTranspose::kNone) bytes += x_bytes;
  if (options.residual) bytes += copied(factorization.input) + rhs.byte_size();
  // cuBLAS's own workspace and the pool's rounding.
  constexpr uint64_t kMargin = uint64_t{4} << 20;
  return bytes + kMargin;
}

}  // namespace matrixd::cuda
