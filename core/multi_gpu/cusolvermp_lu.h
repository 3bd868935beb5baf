// LU with partial pivoting (P A = L U) of one float64 n x n matrix spread over the GPUs of an NCCL
// communicator, one process per GPU, by NVIDIA's cuSOLVERMp (cusolverMpGetrf on a 2-D
// block-cyclic grid), and its determinant read off the distributed factor: each rank sums
// log|U(k,k)| and counts negative pivots over the diagonal entries it holds, the row swaps are
// counted from the pivot vector (pivot_counts.h), and one NCCL all-reduce combines them, so that
// no rank ever gathers the matrix and |det| cannot overflow.
#ifndef MATRIXD_CORE_MULTI_GPU_CUSOLVERMP_LU_H_
#define MATRIXD_CORE_MULTI_GPU_CUSOLVERMP_LU_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cuda/block_cyclic_kernels.h"
#include "core/distributed/block_cyclic.h"
#include "core/multi_gpu/nccl_rank.h"
#include "core/multi_gpu/pivot_counts.h"

struct cusolverMpHandle;
struct cusolverMpGrid;
struct cusolverMpMatrixDescriptor;

namespace matrixd::multi_gpu {

class CusolverMpLu {
 public:
  // Plans the LU of an n x n matrix over `grid` (grid.size() == rank.ranks()) with square blocks
  // of `block`, and allocates this rank's part of the matrix, the pivots and the workspace.
  // Collective. Errors as CublasMpGemm::Create.
  static absl::StatusOr<std::unique_ptr<CusolverMpLu>> Create(NcclRank& rank,
                                                              distributed::GridShape grid,
                                                              int64_t n, int64_t block);
  ~CusolverMpLu();
  CusolverMpLu(const CusolverMpLu&) = delete;
  CusolverMpLu& operator=(const CusolverMpLu&) = delete;

  // This rank's part of the matrix: fill it before Factor; after it holds this rank's L and U.
  const cuda::BlockCyclicPart& part() const { return part_; }
  double* matrix() const { return a_.get(); }
  size_t workspace_bytes() const { return device_work_.bytes(); }

  // Factors the matrix in place, queued on the rank's stream; returns before it completes.
  // Collective.
  absl::Status Factor();

  // The determinant of the matrix the last Factor factored, the same on every rank. Waits for
  // the factorisation. Collective. INTERNAL when no reading of the pivot vector passes the
  // checks of pivot_counts.h.
  absl::StatusOr<DistributedDeterminant> Determinant();

 private:
  explicit CusolverMpLu(NcclRank& rank) : rank_(rank) {}

  NcclRank& rank_;
  int64_t n_ = 0;
  cuda::BlockCyclicPart part_;
  DeviceArray<double> a_;
  DeviceArray<int64_t> pivots_;
  DeviceArray<int> info_;
  DeviceArray<double> summary_;  // cuda::LaunchDiagonalSummary's fields
  DeviceArray<unsigned char> device_work_;
  std::vector<unsigned char> host_work_;
  cusolverMpHandle* handle_ = nullptr;
  cusolverMpGrid* grid_ = nullptr;
  cusolverMpMatrixDescriptor* a_desc_ = nullptr;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_CUSOLVERMP_LU_H_
