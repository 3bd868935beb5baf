// The host's pacing of a long queued device computation (the condensation schedules, the modular
// LU): a check-in every few steps that keeps the host at most two intervals ahead of the device,
// reports progress and honours cancellation, without any other host synchronisation. Plain C++
// (no kernels), for .cc and .cu files alike.
#ifndef MATRIXD_CORE_CUDA_CHECK_IN_PACER_H_
#define MATRIXD_CORE_CUDA_CHECK_IN_PACER_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/cuda_stream.h"
#include "core/job_control.h"

namespace matrixd::cuda {

// Fraction of the n^3 work done once the matrix is down to order m.
inline double EliminationProgress(int64_t m, int64_t n) {
  const double left = static_cast<double>(m) / static_cast<double>(n);
  return 1.0 - left * left * left;
}

// The one host synchronisation a schedule allows itself, every few steps: each check-in marks the
// stream and waits for the previous mark, so the host stays at most two intervals ahead of the
// device (cancellation takes effect within about one interval, progress trails by one) and the
// stream never runs dry. A step that meets a zero first row sets the device flag `status`; the
// kernels queued after it return at once, and the schedule reads the flag at the end.
class CheckInPacer {
 public:
  static absl::StatusOr<CheckInPacer> Create() {
    MATRIXD_ASSIGN_OR_RETURN(CudaEvent first, CudaEvent::Create());
    MATRIXD_ASSIGN_OR_RETURN(CudaEvent second, CudaEvent::Create());
    return CheckInPacer(std::move(first), std::move(second));
  }

  // `progress`: the fraction of the work done once the stream reaches this point.
  absl::Status CheckIn(cudaStream_t stream, JobControl* control, double progress) {
    CudaEvent& mark = count_ % 2 == 0 ? even_ : odd_;
    MATRIXD_RETURN_IF_ERROR(mark.Record(stream));
    if (count_ > 0) {
      CudaEvent& previous = count_ % 2 == 0 ? odd_ : even_;
      MATRIXD_RETURN_IF_ERROR(previous.Synchronize());
      ReportProgress(control, previous_progress_);
    }
    ++count_;
    previous_progress_ = progress;
    if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
    return absl::OkStatus();
  }

 private:
  CheckInPacer(CudaEvent even, CudaEvent odd) : even_(std::move(even)), odd_(std::move(odd)) {}

  CudaEvent even_;
  CudaEvent odd_;
  int64_t count_ = 0;
  double previous_progress_ = 0.0;
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_CHECK_IN_PACER_H_
