// What the condensation schedules (one kernel per step, or blocked passes of several steps) share
// on the host side: their result, and the pacing of their check-ins.
#ifndef MATRIXD_CORE_CUDA_ELIMINATION_SCHEDULE_CUH_
#define MATRIXD_CORE_CUDA_ELIMINATION_SCHEDULE_CUH_

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/check_in_pacer.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/device_context.h"
#include "core/cuda/elimination.h"
#include "core/cuda/elimination_fields.cuh"
#include "core/job_control.h"

namespace matrixd::cuda {

// Steps between two host check-ins (cancellation, progress).
inline constexpr int kStepsPerCheckIn = 16;

// det(A) = product of `pivots` (n of them, in step order), or 0 when `singular` (some step's first
// row had no non-zero entry; pivots is then empty).
template <typename T>
struct EliminationOutcome {
  bool singular = false;
  std::vector<T> pivots;
};

// Condensation work of the steps that take an order-`from` matrix down to order `to`: each step
// from order m updates (m-1)^2 entries.
inline double CondensedEntries(int64_t from, int64_t to) {
  double entries = 0.0;
  for (int64_t m = from; m > to; --m) entries += static_cast<double>(m - 1) * (m - 1);
  return entries;
}

// The pivots and the zero-row flag once the queued steps are done.
template <typename T>
absl::StatusOr<EliminationOutcome<T>> CollectOutcome(DeviceContext& context,
                                                     const DeviceBuffer& status,
                                                     const DeviceBuffer& pivots, int64_t n) {
  EliminationOutcome<T> outcome;
  int flag = 0;
  MATRIXD_RETURN_IF_ERROR(context.Download(status, &flag, sizeof(flag)));
  if (flag != 0) {
    outcome.singular = true;
    return outcome;
  }
  outcome.pivots.resize(static_cast<size_t>(n));
  MATRIXD_RETURN_IF_ERROR(
      context.Download(pivots, outcome.pivots.data(), outcome.pivots.size() * sizeof(T)));
  return outcome;
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_ELIMINATION_SCHEDULE_CUH_
