// One GPU's share of the multi-GPU LU (multi_gpu_lu.h): the CUDA resources it owns on that
// device. Two streams: `panel`, of the highest priority, factors the look-ahead panel and sends it,
// while `update` runs the trailing update beside it; a cuBLAS handle on each, a cuSOLVER handle
// on `panel`, and the events that order the two streams and the GPUs (indexed by the parity of
// the elimination step, so that a wait never sees the record of a later step). Everything is
// created by Create and destroyed with the lane, on its device: the streams and events are
// cuda_stream.h's owned types, the library handles are released by the destructor.
#ifndef MATRIXD_CORE_MULTI_GPU_LU_LANE_H_
#define MATRIXD_CORE_MULTI_GPU_LU_LANE_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <array>
#include <memory>

#include "absl/status/statusor.h"
#include "core/cuda/cuda_stream.h"

namespace matrixd::multi_gpu {

struct LuLane {
  using EventPair = std::array<cuda::CudaEvent, 2>;

  // Makes the streams, handles and events on CUDA device `device`. INTERNAL naming the call when
  // one fails (what was made is released).
  static absl::StatusOr<std::unique_ptr<LuLane>> Create(int device);
  // Waits for the work queued on both streams (a failed Factor returns early), which must not
  // outlive the handles it uses, then releases everything on `device`.
  ~LuLane();
  LuLane(const LuLane&) = delete;
  LuLane& operator=(const LuLane&) = delete;

  int device = 0;
  // Declared before the events and handles: destroyed after them.
  cuda::CudaStream panel;
  cuda::CudaStream update;
  // Step k's parity s = k % 2:
  EventPair factored;        // (owner) panel k factored, pivots global
  EventPair sent;            // (owner) panel k copied to every other GPU
  EventPair lookahead_done;  // the next panel's columns updated with panel k
  EventPair released;        // this GPU no longer reads its copy of panel k
  EventPair update_done;     // this GPU's trailing update with panel k done
  cublasHandle_t panel_blas = nullptr;
  cublasHandle_t update_blas = nullptr;
  cusolverDnHandle_t solver = nullptr;

 private:
  LuLane(int device, cuda::CudaStream panel, cuda::CudaStream update, EventPair factored,
         EventPair sent, EventPair lookahead_done, EventPair released, EventPair update_done);
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_LU_LANE_H_
