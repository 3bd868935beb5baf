// LU with partial pivoting of one float64 n x n matrix over several GPUs of this process by
// NVIDIA's cusolverMg (cusolverMgGetrf: 1-D column block-cyclic over the GPUs, blocks of `block`
// columns, all rows on every GPU, the layout of multi_gpu_lu.h), and its determinant from the
// factors: log|U(k,k)| summed and negative pivots counted on each GPU, the row swaps counted from
// the pivot vector (pivot_counts.h). A yardstick for MultiGpuLu, measured by matrixd_lu_bench.
#ifndef MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_LU_H_
#define MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_LU_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cuda/block_cyclic_kernels.h"
#include "core/multi_gpu/cusolvermg_library.h"
#include "core/multi_gpu/device_allocation.h"
#include "core/multi_gpu/pivot_counts.h"

namespace matrixd::multi_gpu {

class CusolverMgLu {
 public:
  // Loads cusolverMg, selects `devices` (distinct CUDA ordinals), enables peer access, and
  // allocates each GPU's part, pivots and workspace. UNAVAILABLE when the library cannot be
  // loaded; INVALID_ARGUMENT for no devices, n < 1 or n >= 2^31, block < 1; RESOURCE_EXHAUSTED
  // when a part does not fit; INTERNAL for CUDA and cuSOLVER errors.
  static absl::StatusOr<std::unique_ptr<CusolverMgLu>> Create(std::vector<int> devices, int64_t n,
                                                              int64_t block);
  ~CusolverMgLu();
  CusolverMgLu(const CusolverMgLu&) = delete;
  CusolverMgLu& operator=(const CusolverMgLu&) = delete;

  int gpus() const { return static_cast<int>(devices_.size()); }
  const cuda::BlockCyclicPart& part(int g) const { return parts_[g]; }
  double* matrix(int g) const { return matrices_[g].get(); }

  // Makes `matrix` from `seed` in place on every GPU and waits for it.
  absl::Status Generate(cuda::GeneratedMatrix matrix, uint64_t seed);
  // Factors in place; returns when done (cusolverMg synchronises). INTERNAL for a library error
  // or a negative info; a zero pivot is no error.
  absl::Status Factor();
  // The determinant of the last factorisation (sign 0 and -inf when singular). INTERNAL when the
  // pivots fit none of pivot_counts.h's readings.
  absl::StatusOr<DistributedDeterminant> Determinant();

 private:
  CusolverMgLu() = default;

  // Declared first, so destroyed last: the handles below are the library's.
  std::unique_ptr<CusolverMgLibrary> library_;
  std::vector<int> devices_;
  int64_t n_ = 0;
  int64_t block_ = 0;
  std::vector<cuda::BlockCyclicPart> parts_;
  std::vector<DeviceAllocation<double>> matrices_;
  std::vector<DeviceAllocation<int>> pivots_;  // n entries each, room for either reading
  std::vector<DeviceAllocation<double>> work_;
  std::vector<DeviceAllocation<double>> summary_;
  std::vector<void*> matrix_pointers_;  // what cusolverMg takes: one pointer per GPU
  std::vector<int*> pivot_pointers_;
  std::vector<void*> work_pointers_;
  int64_t work_elements_ = 0;
  cusolverMgHandle_t handle_ = nullptr;
  cudaLibMgGrid_t grid_ = nullptr;
  cudaLibMgMatrixDesc_t desc_ = nullptr;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_LU_H_
