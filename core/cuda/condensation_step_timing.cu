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
  if (absl::Status s = timer.Start(stream); !s.ok()) return s;
  if (absl::Status s = launch(); !s.ok()) return s;
  if (absl::Status s = timer.Stop(stream); !s.ok()) return s;
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
  absl::StatusOr<DeviceBuffer> next = context.Allocate(order * order * sizeof(T));
  if (!next.ok()) return next.status();
  absl::StatusOr<DeviceBuffer> scaled_row = context.Allocate(static_cast<size_t>(m) * sizeof(T));
  if (!scaled_row.ok()) return scaled_row.status();
  absl::StatusOr<DeviceBuffer> pivot = context.Allocate(sizeof(T));
  if (!pivot.ok()) return pivot.status();
  absl::StatusOr<DeviceBuffer> flags = context.Allocate(2 * sizeof(int));  // status, column
  if (!flags.ok()) return flags.status();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(flags->data(), 0, 2 * sizeof(int), stream));
  const StepScratch<T> scratch{scaled_row->as<T>(), flags->as<int>() + 1, pivot->as<T>(),
                               flags->as<int>()};
  const RealField field{};
  const T* a = matrix.as<const T>();

  absl::StatusOr<EventTimer> timer = EventTimer::Create();
  if (!timer.ok()) return timer.status();
  std::vector<double> pivot_row_seconds;
  std::vector<double> step_seconds;
  for (int r = 0; r <= repeats; ++r) {
    absl::StatusOr<double> pivot_row =
        TimeLaunch(*timer, stream, [&] { return LaunchPivotRow(stream, field, a, m, scratch); });
    if (!pivot_row.ok()) return pivot_row.status();
    absl::StatusOr<double> step = TimeLaunch(*timer, stream, [&] {
      return LaunchCondensationStep(stream, field, a, m, scratch, next->as<T>());
    });
    if (!step.ok()) return step.status();
    if (r == 0) continue;  // warm-up
    pivot_row_seconds.push_back(*pivot_row);
    step_seconds.push_back(*step);
  }
  int status = 0;
  if (absl::Status s = context.Download(*flags, &status, sizeof(status)); !s.ok()) return s;
  if (status != 0) {
    return absl::FailedPreconditionError(
        "condensation step timing: the matrix's first row is zero, so the step does not run");
  }
  return CondensationStepTiming{.step_seconds = Median(step_seconds),
                                .pivot_row_seconds = Median(pivot_row_seconds),
                                .step_bytes = CondensationStepBytes<T>(m)};
}

}  // namespace matrixd::cuda
