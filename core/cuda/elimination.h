// Condensation on the device, over a matrix already there: the part of the condensation and
// modular LU determinants that runs kernels. Plain C++ (no kernels, no core/matrix.h, which the
// CUDA front end cannot compile in C++20 mode), so that the host code in condensation.cc and
// modular_lu.cc calls it like any library.
#ifndef MATRIXD_CORE_CUDA_ELIMINATION_H_
#define MATRIXD_CORE_CUDA_ELIMINATION_H_

#include <complex>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/job_control.h"

namespace matrixd::cuda {

enum class Schedule {
  kBlocked,   // several condensation steps fused per pass over the matrix
  kStepwise,  // one kernel launch per step, the seed paper's schedule
};

// How residues mod p are held on the device.
enum class ResidueArithmetic {
  kUint64,           // canonical residues, Barrett products: any p < 2^62
  kBalancedFloat64,  // |r| <= p/2 in float64, exact products, delayed reduction: p < 2^26
};

// What the device did, for ComputeStats: arithmetic operations and bytes through device memory
// (uploads included).
struct EliminationWork {
  double flops = 0.0;
  uint64_t bytes_moved = 0;
};

// det(A) = product of `values` (n pivots, in step order), or 0 when `singular` (a step met a
// first row without a non-zero entry; values is then empty).
struct CondensationPivots {
  bool singular = false;
  std::vector<std::complex<double>> values;
};

// Condenses the n x n row-major matrix in `matrix` (float64, or complex128 when `complex`;
// overwritten) with the closest-to-1 pivot of the seed paper's section 4.1. Checks `control`
// every few steps: CANCELLED when it was cancelled; reports progress in [0, 1).
absl::StatusOr<CondensationPivots> CondensePivots(DeviceContext& context, DeviceBuffer& matrix,
                                                  int64_t n, bool complex, Schedule schedule,
                                                  JobControl* control, EliminationWork* work);

// det(A) mod p in [0, p) of the n x n row-major int64 matrix at `entries` (host memory), with the
// first-non-zero pivot. Uploads the entries and reduces them on the device.
// REQUIRES: p prime, 2 <= p < 2^62; p < 2^26 for kBalancedFloat64.
absl::StatusOr<uint64_t> ModularDeterminantOnDevice(DeviceContext& context, const int64_t* entries,
                                                    int64_t n, uint64_t p,
                                                    ResidueArithmetic arithmetic, Schedule schedule,
                                                    JobControl* control, EliminationWork* work);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_ELIMINATION_H_
