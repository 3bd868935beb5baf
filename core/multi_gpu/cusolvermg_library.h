// NVIDIA's single-process multi-GPU cuSOLVER (cusolverMg, in the CUDA toolkit), loaded at run
// time with dlopen so that nothing else in a program depends on the library being installed: a
// machine without it loses only what uses it. The functions matrixd calls, typed from the toolkit's
// header. cusolverMg is marked deprecated in CUDA 13: the determinant over several GPUs is ours
// (multi_gpu_lu.h), cusolverMg its yardstick; Factorize over several GPUs runs on it
// (multi_gpu_factorize.h).
#ifndef MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_LIBRARY_H_
#define MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_LIBRARY_H_

#ifndef DISABLE_CUSOLVERMG_DEPRECATED
#define DISABLE_CUSOLVERMG_DEPRECATED
#endif
#include <cusolverMg.h>

#include <memory>

#include "absl/status/statusor.h"

namespace matrixd::multi_gpu {

class CusolverMgLibrary {
 public:
  // Opens libcusolverMg.so.12 (or libcusolverMg.so) and resolves the functions below.
  // UNAVAILABLE naming the library or the symbol when that fails.
  static absl::StatusOr<std::unique_ptr<CusolverMgLibrary>> Load();
  ~CusolverMgLibrary();  // closes the library
  CusolverMgLibrary(const CusolverMgLibrary&) = delete;
  CusolverMgLibrary& operator=(const CusolverMgLibrary&) = delete;

  decltype(&cusolverMgCreate) create = nullptr;
  decltype(&cusolverMgDestroy) destroy = nullptr;
  decltype(&cusolverMgDeviceSelect) device_select = nullptr;
  decltype(&cusolverMgCreateDeviceGrid) create_device_grid = nullptr;
  decltype(&cusolverMgDestroyGrid) destroy_grid = nullptr;
  decltype(&cusolverMgCreateMatrixDesc) create_matrix_desc = nullptr;
  decltype(&cusolverMgDestroyMatrixDesc) destroy_matrix_desc = nullptr;
  decltype(&cusolverMgGetrf_bufferSize) getrf_buffer_size = nullptr;
  decltype(&cusolverMgGetrf) getrf = nullptr;
  decltype(&cusolverMgGetrs_bufferSize) getrs_buffer_size = nullptr;
  decltype(&cusolverMgGetrs) getrs = nullptr;
  decltype(&cusolverMgPotrf_bufferSize) potrf_buffer_size = nullptr;
  decltype(&cusolverMgPotrf) potrf = nullptr;
  decltype(&cusolverMgPotrs_bufferSize) potrs_buffer_size = nullptr;
  decltype(&cusolverMgPotrs) potrs = nullptr;

 private:
  CusolverMgLibrary() = default;
  void* handle_ = nullptr;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_LIBRARY_H_
