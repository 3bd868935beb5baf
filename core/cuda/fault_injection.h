// Process-wide injected failures of the CUDA backend, for tests on a GPU (docs/reliability.md,
// "Faults"): a test arms one point's countdown (core/fault_countdown.h) and the n-th check of
// that point from then on fails as the device or library would have failed there. Compiled in
// always; a disarmed check costs one relaxed atomic load. Nothing in production arms them.
//
// The points and where they are checked:
// - kDeviceAllocation: every allocation from a device's memory stack, at the pool
//   (CudaAsyncResource, cuda_memory_resource.cc), below the limit and statistics adaptors. It
//   fails RESOURCE_EXHAUSTED as cudaMallocFromPoolAsync's cudaErrorMemoryAllocation would, and the
//   stack's retry after trimming fails too (an exhausted device, not a cache to give back).
// - kKernelLaunch: every kernel launch check (a `Launch*` launcher's cudaError_t, or
//   MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR) that succeeded; it reports
//   cudaErrorLaunchOutOfResources, a launch failure that does not poison the context.
// - kCusolverCall: every cuSOLVER call that succeeded; it reports
//   CUSOLVER_STATUS_EXECUTION_FAILED.
// An injected failure happens after the real call ran, as a real error status would come back:
// what the call queued stays queued, and the failure path must clean up around it.
#ifndef MATRIXD_CORE_CUDA_FAULT_INJECTION_H_
#define MATRIXD_CORE_CUDA_FAULT_INJECTION_H_

#include <cstdint>

#include "core/fault_countdown.h"

namespace matrixd::cuda {

enum class FaultPoint { kDeviceAllocation, kKernelLaunch, kCusolverCall };

// The process-wide countdown of `point`.
FaultCountdown& InjectedFault(FaultPoint point);

// Arms `point` to fail at its `nth` next check while it lives, and disarms it when destroyed (so a
// test that fails early leaves no armed fault to the next one).
class ScopedFault {
 public:
  ScopedFault(FaultPoint point, int64_t nth) : countdown_(InjectedFault(point)) {
    countdown_.Arm(nth);
  }
  ~ScopedFault() { countdown_.Disarm(); }
  ScopedFault(const ScopedFault&) = delete;
  ScopedFault& operator=(const ScopedFault&) = delete;

 private:
  FaultCountdown& countdown_;
};

// In the message of every injected failure, so that logs and tests tell it from a real one.
inline constexpr char kInjectedFaultNote[] = "[injected fault]";

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_FAULT_INJECTION_H_
