// Small determinants on the host CPU inside the CUDA backend. Up to an order of about 64 a
// device round trip (upload, 3-5 kernel launches, a synchronizing download) costs more than the
// whole LU on one host core, so the CUDA backend answers such a determinant from host memory with
// the CPU backend's code (core/cpu/determinant.h): the same value bit for bit, at a fraction of
// the latency. Operands already on the device, and orders above the limit, stay on the device.
#ifndef MATRIXD_CORE_CUDA_HOST_DETERMINANT_H_
#define MATRIXD_CORE_CUDA_HOST_DETERMINANT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// What stats.device says of a determinant computed by HostDeterminant.
inline constexpr char kHostDeterminantDevice[] = "host CPU";

// True when `a` (host memory, order <= max_order) is answered by HostDeterminant; max_order 0
// turns the host path off.
bool DeterminantRunsOnHost(const MatrixView& a, const DeterminantOptions& options,
                           int64_t max_order);

// cpu::Determinant on one thread, timed: stats.seconds, one KernelRecord named "host_lu" or
// "host_condensation" (by method_used), stats.backend "cuda" and stats.device
// kHostDeterminantDevice.
absl::StatusOr<DeterminantResult> HostDeterminant(const MatrixView& a,
                                                  const DeterminantOptions& options,
                                                  JobControl* control);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_HOST_DETERMINANT_H_
