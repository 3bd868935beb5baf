// A second stream of a device context, of the device's highest scheduling priority, with a cuBLAS
// handle of its own bound to it: for an operation that keeps its critical path (a panel
// factorization) on this lane while its bulk work (the trailing updates) runs on the context's
// stream, the two ordered by events (CudaEvent). Its thread blocks are dispatched before the
// context stream's wherever both wait for an SM. Owns the stream and the handle; neither movable
// nor copyable (the context holds it by pointer).
#ifndef MATRIXD_CORE_CUDA_SIDE_LANE_H_
#define MATRIXD_CORE_CUDA_SIDE_LANE_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>

#include "absl/status/statusor.h"
#include "core/cuda/cuda_stream.h"

namespace matrixd::cuda {

class SideLane {
 public:
  // On the current device. UNAVAILABLE-like statuses from CUDA or cuBLAS on failure.
  static absl::StatusOr<std::unique_ptr<SideLane>> Create();
  ~SideLane();
  SideLane(const SideLane&) = delete;
  SideLane& operator=(const SideLane&) = delete;

  cudaStream_t stream() const { return stream_.get(); }
  cublasHandle_t cublas() const { return cublas_; }

 private:
  explicit SideLane(CudaStream stream) : stream_(std::move(stream)) {}
  CudaStream stream_;
  cublasHandle_t cublas_ = nullptr;
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_SIDE_LANE_H_
