#include "core/cuda/fault_injection.h"

namespace matrixd::cuda {

FaultCountdown& InjectedFault(FaultPoint point) {
  // Never destroyed: checks may run from other threads' destructors at exit.
  static FaultCountdown* const countdowns = new FaultCountdown[3];
  switch (point) {
    case FaultPoint::kDeviceAllocation:
      return countdowns[0];
    case FaultPoint::kKernelLaunch:
      return countdowns[1];
    case FaultPoint::kCusolverCall:
      return countdowns[2];
  }
  return countdowns[0];
}

}  // namespace matrixd::cuda
