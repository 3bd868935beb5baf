// One GPU's share of the multi-GPU LU (multi_gpu_lu.h): the CUDA resources it owns on that
// device. Two streams: `panel`, of the highest priority, factors the look-ahead panel and sends it,
// while `update` runs the trailing update beside it; a cuBLAS handle on each, a cuSOLVER handle
// on `panel`, and the events that order the two streams and the GPUs (indexed by the parity of
// the elimination step, so that a wait never sees the record of a later step). Everything is
// created by Create and destroyed with the lane, on its device.
#ifndef MATRIXD_CORE_MULTI_GPU_LU_LANE_H_
#define MATRIXD_CORE_MULTI_GPU_LU_LANE_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <array>
#include <memory>

#include "absl/status/statusor.h"

namespace matrixd::multi_gpu {

struct LuLane {
  // Makes the streams, handles and events on CUDA device `device`. INTERNAL naming the call when
  // one fails (what was made is released).
  static absl::StatusOr<std::unique_ptr<LuLane>> Create(int device);
  ~LuLane();
  LuLane(const LuLane&) = delete;
  LuLane& operator=(const LuLane&) = delete;

  int device = 0;
  cudaStream_t panel = nullptr;
  cudaStream_t update = nullptr;
  cublasHandle_t panel_blas = nullptr;
  cublasHandle_t update_blas = nullptr;
  cusolverDnHandle_t solver = nullptr;
  // Step k's parity s = k % 2:
  std::array<cudaEvent_t, 2> factored{};        // (owner) panel k factored, pivots global
  std::array<cudaEvent_t, 2> sent{};            // (owner) panel k copied to every other GPU
  std::array<cudaEvent_t, 2> lookahead_done{};  // the next panel's columns updated with panel k
  std::array<cudaEvent_t, 2> released{};        // this GPU no longer reads its copy of panel k
  std::array<cudaEvent_t, 2> update_done{};     // this GPU's trailing update with panel k done

 private:
  LuLane() = default;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_LU_LANE_H_
