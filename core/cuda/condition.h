// Condition estimates on the CUDA backend: ||A||_1 from column sums taken on the device before a
// factorization overwrites A, and the block estimator of core/condition_estimate.h run on the
// device (cuSOLVER has no ?gecon): the n x kDeviceEstimateColumns block of vectors stays there,
// each step is one solve by the device factors plus small kernels (core/cuda/condition_kernels.h),
// and only a few scalars come back after each solve (one synchronisation per solve, 4 or 5 in
// all on most matrices, at most 11): O(n^2) work against the factorization's O(n^3).
#ifndef MATRIXD_CORE_CUDA_CONDITION_H_
#define MATRIXD_CORE_CUDA_CONDITION_H_

#include <cstdint>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/device_context.h"
#include "core/cuda/kernel_timer.h"
#include "core/operations.h"

namespace matrixd::cuda {

// ||A||_1 of a device matrix: queued at once (stream-ordered before whatever overwrites A), read
// when needed.
class DeviceOneNorm {
 public:
  // Queues the column sums of |a_ij| of the column-major rows x cols matrix at `a` (leading
  // dimension ld; only its upper triangle when `upper_triangle`). T is float, double,
  // std::complex<float> or std::complex<double>.
  template <typename T>
  static absl::StatusOr<DeviceOneNorm> Queue(DeviceContext& context, const T* a, int64_t rows,
                                             int64_t cols, int64_t ld, bool upper_triangle);

  // The column sums another kernel queued into `sums` (cols doubles) as a pass of its own over
  // the matrix (LaunchScaleRows' row_abs_sums): no kernel of its own, so no record.
  static DeviceOneNorm FromSums(DeviceBuffer sums, int64_t cols) {
    return DeviceOneNorm(std::move(sums), cols, 0, std::nullopt);
  }

  // Downloads the sums (synchronising the stream) and returns their maximum; appends the kernel
  // record "one_norm" to stats->kernels when Queue launched the kernel.
  absl::StatusOr<double> Value(DeviceContext& context, ComputeStats* stats);

 private:
  DeviceOneNorm(DeviceBuffer sums, int64_t cols, uint64_t bytes, std::optional<KernelTimer> timer)
      : sums_(std::move(sums)), cols_(cols), bytes_(bytes), timer_(std::move(timer)) {}

  DeviceBuffer sums_;
  int64_t cols_;
  uint64_t bytes_;  // read by the kernel
  std::optional<KernelTimer> timer_;
};

// x := A^-1 x (adjoint false) or A^-H x (true): an n x columns block of the factorization's type
// at device address x, column-major with leading dimension n, queued on the context's stream
// (the backend's estimates use DeviceFactorSolves::Apply, core/cuda/factor_solves.h).
using DeviceInverseApply = absl::FunctionRef<absl::Status(bool adjoint, void* x, int columns)>;

// Columns of the device estimator's block. 1, not the host's 2: on random matrices 2 columns take
// as many block solves as 1 (4 to 6 at n = 1024 to 4096, the CPU estimator on the bench's
// matrices), so the second column buys a better estimate (Higham's alternating vector, the
// host's decisions) and no fewer chains; its price is what a second right-hand side adds to our
// triangular solve (the bench's `condition` table measures both; cuSOLVER's getrs with 2 took
// 3.0 x its time with 1, docs/accuracy.md).
inline constexpr int kDeviceEstimateColumns = 1;

// EstimateReciprocalCondition (core/condition_estimate.h) of an n x n A with ||A||_1 = one_norm,
// a block of `columns` columns (1 to kMaxEstimateColumns, capped at n) in T on the device, solved
// by `apply` (the estimator's decisions are made on the host from the doubles that come back).
// Adds the solves' work to stats and the kernel record "condition_estimate"; `solves`, when
// given, receives the block solves done.
template <typename T>
absl::StatusOr<double> DeviceReciprocalCondition(DeviceContext& context, int64_t n, double one_norm,
                                                 DeviceInverseApply apply, ComputeStats* stats,
                                                 int columns = kDeviceEstimateColumns,
                                                 int* solves = nullptr);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_CONDITION_H_
