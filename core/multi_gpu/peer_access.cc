#include "core/multi_gpu/peer_access.h"

#include <cuda_runtime.h>

#include "core/cuda/cuda_status.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {

absl::Status EnablePeerAccess(const std::vector<int>& devices) {
  for (int from : devices) {
    for (int to : devices) {
      if (from == to) continue;
      int can = 0;
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaDeviceCanAccessPeer(&can, from, to));
      if (can == 0) continue;
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(from));
      const cudaError_t code = cudaDeviceEnablePeerAccess(to, 0);
      if (code == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();  // not an error here; clear it for later launch checks
        continue;
      }
      MATRIXD_CUDA_RETURN_IF_ERROR(code);
    }
  }
  return absl::OkStatus();
}

}  // namespace matrixd::multi_gpu
