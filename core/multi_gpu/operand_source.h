// Where a job over several GPUs copies an operand from. Host memory: each GPU pulls its share on a
// stream of its own. Device memory (a resident matrix in one GPU's stream-ordered pool, a CUDA IPC
// region): the GPU holding it pushes every share, on a stream of that GPU. Pool memory is
// readable by another GPU only where the two have peer access (core/cuda/cuda_memory_resource.h
// grants it then; without it a pull fails with cudaErrorInvalidValue), while the shares'
// destinations (cudaMalloc) take a copy from any GPU, peer to peer or, where peer access is off,
// through the host: pushing works on every machine.
#ifndef MATRIXD_CORE_MULTI_GPU_OPERAND_SOURCE_H_
#define MATRIXD_CORE_MULTI_GPU_OPERAND_SOURCE_H_

#include <cuda_runtime.h>

#include <optional>

#include "absl/status/statusor.h"
#include "core/cuda/cuda_stream.h"
#include "core/matrix.h"

namespace matrixd::multi_gpu {

class OperandSource {
 public:
  // The source of `view`'s bytes; for device memory, a stream of its own on the holding GPU.
  // INTERNAL for CUDA errors. Leaves an unspecified device current.
  static absl::StatusOr<OperandSource> Of(const MatrixView& view);

  // The CUDA ordinal of the GPU holding the bytes, or -1 for host memory.
  int device() const { return device_; }

  // Makes current the GPU that copies a share to `device` and returns the stream to queue that
  // copy on: `pulling` (a stream of `device`) for host memory, else the holder's stream.
  absl::StatusOr<cudaStream_t> StreamFor(int device, cudaStream_t pulling) const;

  // Waits for the copies queued on the holder's stream; nothing to wait for from host memory.
  absl::Status Synchronize() const;

 private:
  int device_ = -1;
  std::optional<cuda::CudaStream> stream_;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_OPERAND_SOURCE_H_
