// An operation's input in this device's memory: a resident matrix already there is read in
// place; anything else (host memory, another device) is copied into a buffer of the operand's own.
#ifndef MATRIXD_CORE_CUDA_DEVICE_OPERAND_H_
#define MATRIXD_CORE_CUDA_DEVICE_OPERAND_H_

#include "absl/status/statusor.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/device_context.h"
#include "core/matrix.h"

namespace matrixd::cuda {

struct DeviceOperand {
  const void* data = nullptr;  // the operand on this device, row-major as the view
  DeviceBuffer copy;           // empty when read in place
};

// Whether `view` lies in the memory of `context`'s device (a resident matrix's device view), so
// that kernels there may read it in place.
bool InPlaceOnDevice(const MatrixView& view, const DeviceContext& context);

// The operand in place, or uploaded (queued on the context's stream; the host memory may be
// reused on return). RESOURCE_EXHAUSTED when the copy does not fit.
absl::StatusOr<DeviceOperand> OnDevice(const MatrixView& view, DeviceContext& context);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DEVICE_OPERAND_H_
