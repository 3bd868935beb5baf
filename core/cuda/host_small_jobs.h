// Small jobs on the host CPU inside the CUDA backend. Up to an order of about 64 a device round
// trip (upload, 3-5 kernel launches, a synchronizing download) costs more than the whole LU on one
// host core, so the CUDA backend answers a determinant, or a factorization of one matrix, from
// host memory with the CPU backend's code (core/cpu/determinant.h, core/cpu/factorize.h): the same
// result bit for bit, at a fraction of the latency and without taking a device stream. Operands
// already on the device, batches, jobs over several GPUs and orders above the limits stay on the
// device.
#ifndef MATRIXD_CORE_CUDA_HOST_SMALL_JOBS_H_
#define MATRIXD_CORE_CUDA_HOST_SMALL_JOBS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// What stats.device says of a job computed by HostDeterminant or HostFactorize.
inline constexpr char kHostComputeDevice[] = "host CPU";

// True when `a` (host memory, order <= max_order) is answered by HostDeterminant; max_order 0
// turns the host path off.
bool DeterminantRunsOnHost(const MatrixView& a, const DeterminantOptions& options,
                           int64_t max_order);

// True when HostFactorize answers: one matrix (no batch) in host memory with rows and columns <=
// max_order, a right-hand side (if any) in host memory with at most max_order columns, on one
// device, not kept on the devices and without refinement (whose precisions are the device's own).
// max_order 0 turns the host path off.
bool FactorizeRunsOnHost(const MatrixView& a, const FactorizeOptions& options,
                         const MatrixView* rhs, int64_t max_order);

// cpu::Determinant on one thread, timed: stats.seconds, the CPU code's kernel records with
// "host_" before each name (one record "host_lu" or "host_condensation", by method_used, where
// the CPU code timed none), stats.backend "cuda" and stats.device kHostComputeDevice.
absl::StatusOr<DeterminantResult> HostDeterminant(const MatrixView& a,
                                                  const DeterminantOptions& options,
                                                  JobControl* control);

// cpu::Factorize on one thread, timed and labelled as HostDeterminant's (the record where the CPU
// code timed none: "host_getrf", "host_potrf" or "host_geqrf" by kind).
absl::StatusOr<FactorizeResult> HostFactorize(const MatrixView& a, const FactorizeOptions& options,
                                              const MatrixView* rhs, JobControl* control);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_HOST_SMALL_JOBS_H_
