// The CUDA devices a multi-GPU test may use: how many this process sees (0 without a driver or
// device, so that the tests skip), and the first `count` ordinals.
#ifndef MATRIXD_TESTS_MULTI_GPU_GPU_DEVICES_H_
#define MATRIXD_TESTS_MULTI_GPU_GPU_DEVICES_H_

#include <cuda_runtime.h>

#include <vector>

namespace matrixd::testing {

inline int DeviceCount() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

inline std::vector<int> FirstDevices(int count) {
  std::vector<int> ordinals;
  for (int d = 0; d < count; ++d) ordinals.push_back(d);
  return ordinals;
}

}  // namespace matrixd::testing

#endif  // MATRIXD_TESTS_MULTI_GPU_GPU_DEVICES_H_
