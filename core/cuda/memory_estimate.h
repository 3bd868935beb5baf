// Upper estimates of the device memory each CUDA operation allocates at its peak, from shapes and
// options only: what a job states before it starts, for admission (server/memory_admission.h).
// They follow the buffers the operations allocate (inputs, outputs, widened copies, library
// workspaces) plus a margin; an operation that still needs more fails with RESOURCE_EXHAUSTED
// at the pool's cap rather than overrunning it.
#ifndef MATRIXD_CORE_CUDA_MEMORY_ESTIMATE_H_
#define MATRIXD_CORE_CUDA_MEMORY_ESTIMATE_H_

#include <cstdint>

#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

uint64_t DeterminantDeviceBytes(const MatrixView& a, const DeterminantOptions& options);
uint64_t FactorizeDeviceBytes(const MatrixView& a, const FactorizeOptions& options,
                              const MatrixView* rhs);
uint64_t MultiplyDeviceBytes(const MatrixView& a, const MatrixView& b,
                             const MultiplyOptions& options);
uint64_t PermanentDeviceBytes(const MatrixView& a, const PermanentOptions& options);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_MEMORY_ESTIMATE_H_
