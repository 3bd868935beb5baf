// Times one condensation step of the seed paper's schedule (one kernel launch per step, as
// CondensationDeterminantUnfused runs it) on a float64 matrix already on the device: the step
// kernel's effective bandwidth is what matrixd_bench compares with a plain copy.
#ifndef MATRIXD_CORE_CUDA_CONDENSATION_STEP_TIMING_H_
#define MATRIXD_CORE_CUDA_CONDENSATION_STEP_TIMING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"

namespace matrixd::cuda {

struct CondensationStepTiming {
  double step_seconds = 0.0;       // median device time of the step kernel alone
  double pivot_row_seconds = 0.0;  // median device time of the one-block pivot-row kernel
  uint64_t step_bytes = 0;  // what the step kernel must read and write: m^2 + (m-1)^2 doubles
};

// Runs the first step (order m to m - 1, closest-to-1 pivot) on the m x m row-major float64
// matrix in `matrix` with the very kernels of the stepwise schedule: once to warm up, then
// `repeats` times, each kernel between a pair of events of its own. `matrix` is only read; the
// step writes a buffer of its own. Synchronises the context's stream.
// INVALID_ARGUMENT unless m >= 2, repeats >= 1 and `matrix` holds at least m * m doubles;
// FAILED_PRECONDITION when the first row is zero (the step kernel would return at once);
// RESOURCE_EXHAUSTED when the step's output does not fit on the device.
absl::StatusOr<CondensationStepTiming> TimeCondensationStep(DeviceContext& context,
                                                            const DeviceBuffer& matrix, int64_t m,
                                                            int repeats);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_CONDENSATION_STEP_TIMING_H_
