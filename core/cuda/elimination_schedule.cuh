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

// Fraction of the n^3 work done once the matrix is down to order m.
inline double EliminationProgress(int64_t m, int64_t n) {
  const double left = static_cast<double>(m) / static_cast<double>(n);
  return 1.0 - left * left * left;
}

// A CUDA event without timing, owned.
class StreamEvent {
 public:
  static absl::StatusOr<StreamEvent> Create() {
    cudaEvent_t event = nullptr;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    return StreamEvent(event);
  }
  StreamEvent(StreamEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  StreamEvent& operator=(StreamEvent&&) = delete;
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;
  ~StreamEvent() {
    if (event_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaEventDestroy(event_));
  }

  absl::Status Record(cudaStream_t stream) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(event_, stream));
    return absl::OkStatus();
  }
  absl::Status Wait() {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event_));
    return absl::OkStatus();
  }

 private:
  explicit StreamEvent(cudaEvent_t event) : event_(event) {}
  cudaEvent_t event_ = nullptr;
};

// The one host synchronisation a schedule allows itself, every few steps: each check-in marks the
// stream and waits for the previous mark, so the host stays at most two intervals ahead of the
// device (cancellation takes effect within about one interval, progress trails by one) and the
// stream never runs dry. A step that meets a zero first row sets the device flag `status`; the
// kernels queued after it return at once, and the schedule reads the flag at the end.
class CheckInPacer {
 public:
  static absl::StatusOr<CheckInPacer> Create() {
    MATRIXD_ASSIGN_OR_RETURN(StreamEvent first, StreamEvent::Create());
    MATRIXD_ASSIGN_OR_RETURN(StreamEvent second, StreamEvent::Create());
    return CheckInPacer(std::move(first), std::move(second));
  }

  // `progress`: the fraction of the work done once the stream reaches this point.
  absl::Status CheckIn(cudaStream_t stream, JobControl* control, double progress) {
    StreamEvent& mark = count_ % 2 == 0 ? even_ : odd_;
    MATRIXD_RETURN_IF_ERROR(mark.Record(stream));
    if (count_ > 0) {
      StreamEvent& previous = count_ % 2 == 0 ? odd_ : even_;
      MATRIXD_RETURN_IF_ERROR(previous.Wait());
      ReportProgress(control, previous_progress_);
    }
    ++count_;
    previous_progress_ = progress;
    if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
    return absl::OkStatus();
  }

 private:
  CheckInPacer(StreamEvent even, StreamEvent odd) : even_(std::move(even)), odd_(std::move(odd)) {}

  StreamEvent even_;
  StreamEvent odd_;
  int64_t count_ = 0;
  double previous_progress_ = 0.0;
};

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
