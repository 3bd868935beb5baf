// What the cuSOLVER factorisations (single, batched, over several GPUs) share: the flop counts
// they report, the host matrices their results are downloaded into, and their input errors.
#ifndef MATRIXD_CORE_CUDA_FACTORIZE_COMMON_H_
#define MATRIXD_CORE_CUDA_FACTORIZE_COMMON_H_

#include <algorithm>
#include <complex>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/device_context.h"
#include "core/matrix.h"
#include "core/result_destinations.h"
#include "core/status_macros.h"

namespace matrixd::cuda {

template <typename T>
inline constexpr bool kIsComplex =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

// Real operations per multiply-add: 2, or 8 for complex numbers.
template <typename T>
inline constexpr double kFlopsPerUpdate = kIsComplex<T> ? 8.0 : 2.0;

// Real flops of getrf on m x n (LAPACK Working Note 41, as the CPU backend counts them), k =
// min(m, n): m n k - (m + n) k^2 / 2 + k^3 / 3 multiply-adds, two flops each.
inline double LuFlops(double m, double n) {
  const double k = std::min(m, n);
  return 2.0 * m * n * k - (m + n) * k * k + 2.0 * k * k * k / 3.0;
}

// The host matrix result `name` is downloaded into, in full: the caller's destination for it (a
// page-locked shared-memory range: the download lands there at pinned speed) or a new one.
template <typename T>
Matrix HostMatrix(const ResultDestinations& out, std::string_view name, int64_t rows,
                  int64_t cols) {
  return out.MakeForOverwrite(name, rows, cols, DTypeOf<T>());
}

// The FAILED_PRECONDITION of an LU solve whose U[column, column] is exactly zero, and of a
// Cholesky factorization whose leading minor of order `order` (1-based) is not positive: one
// wording for every path that factors on a GPU.
inline absl::Status SingularSolveError(int64_t column) {
  return absl::FailedPreconditionError(absl::StrCat("matrix is singular: U[", column, ",", column,
                                                    "] = 0 at column ", column,
                                                    "; cannot solve A X = rhs"));
}
inline absl::Status NotPositiveDefiniteError(int64_t order) {
  return absl::FailedPreconditionError(
      absl::StrCat("matrix is not positive definite: the leading minor of order ", order,
                   " is not positive (Cholesky failed)"));
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_FACTORIZE_COMMON_H_
