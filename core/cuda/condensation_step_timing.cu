#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/condensation_step_timing.h"
#include "core/cuda/condensation_steps.cuh"
#include "core/cuda/cuda_status.h"
#include "core/cuda/elimination_fields.cuh"

namespace matrixd::cuda {
namespace {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Device seconds of `launch` (one kernel queued on `stream`) between two events.
template <typename Launch>
absl::StatusOr<double> TimeLaunch(EventTimer& timer, cudaStream_t stream, Launch&& launch) {
  MATRIXD_RETURN_IF_ERROR(timer.Start(stream));
  MATRIXD_RETURN_IF_ERROR(launch());
  MATRIXD_RETURN_IF_ERROR(timer.Stop(stream));
  return timer.Seconds();
}

}  // namespace

absl::StatusOr<CondensationStepTiming> TimeCondensationStep(DeviceContext& context,
                                                            const DeviceBuffer& matrix, int64_t m,
                                                            int repeats) {
  using T = RealField::Value;
  if (m < 2 || repeats < 1 ||
      matrix.bytes() / sizeof(T) < static_cast<uint64_t>(m) * static_cast<uint64_t>(m)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "condensation step timing of order ", m, " with ", repeats, " repeats on a buffer of ",
        matrix.bytes(), " bytes; want order >= 2, repeats >= 1 and 8 * order^2 bytes"));
  }
  const cudaStream_t stream = context.stream();
  const size_t order = static_cast<size_t>(m - 1);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer next, context.Allocate(order * order * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer scaled_row,
                           context.Allocate(static_cast<size_t>(m) * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer pivot, context.Allocate(sizeof(T)));
  // status, column
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer flags, context.Allocate(2 * sizeof(int)));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(flags.data(), 0, 2 * sizeof(int), stream));
  const StepScratch<T> scratch{scaled_row.as<T>(), flags.as<int>() + 1, pivot.as<T>(),
                               flags.as<int>()};
  const RealField field{};
  const T* a = matrix.as<const T>();

  MATRIXD_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  std::vector<double> pivot_row_seconds;
  std::vector<double> step_seconds;
  for (int r = 0; r <= repeats; ++r) {
    MATRIXD_ASSIGN_OR_RETURN(const double pivot_row, TimeLaunch(timer, stream, [&] {
                               return LaunchPivotRow(stream, field, a, m, scratch);
                             }));
    MATRIXD_ASSIGN_OR_RETURN(const double step, TimeLaunch(timer, stream, [&] {
                               return LaunchCondensationStep(stream, field, a, m, scratch,
                                                             next.as<T>());
                             }));
    if (r == 0) continue;  // warm-up
    pivot_row_seconds.push_back(pivot_row);
    step_seconds.push_back(step);
  }
  int status = 0;
  MATRIXD_RETURN_IF_ERROR(context.Download(flags, &status, sizeof(status)));
  if (status != 0) {
    return absl::FailedPreconditionError(
        "condensation step timing: the matrix's first row is zero, so the step does not run");
  }
  return CondensationStepTiming{.step_seconds = Median(step_seconds),
                                .pivot_row_seconds = Median(pivot_row_seconds),
                                .step_bytes = CondensationStepBytes<T>(m)};
}

}  // namespace matrixd::cuda
