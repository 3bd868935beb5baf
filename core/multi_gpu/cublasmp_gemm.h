// C = A B in float64 over the GPUs of an NCCL communicator, one process per GPU, by NVIDIA's
// cuBLASMp (cublasMpGemm: PBLAS-style GEMM on a 2-D block-cyclic grid). The operands live on the
// ranks (each holds its block-cyclic parts, see block_cyclic_part.h), as resident distributed
// matrices would: no host transfer is part of the product.
#ifndef MATRIXD_CORE_MULTI_GPU_CUBLASMP_GEMM_H_
#define MATRIXD_CORE_MULTI_GPU_CUBLASMP_GEMM_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cuda/block_cyclic_kernels.h"
#include "core/distributed/block_cyclic.h"
#include "core/multi_gpu/nccl_rank.h"

struct cublasMpHandle;
struct cublasMpGrid;
struct cublasMpMatrixDescriptor;

namespace matrixd::multi_gpu {

class CublasMpGemm {
 public:
  // Plans C (m x n) = A (m x k) B (k x n) over `grid` (grid.size() == rank.ranks()) with square
  // blocks of `block`, and allocates this rank's parts of A, B and C and the library's workspace.
  // Collective: every rank calls it with the same arguments. INVALID_ARGUMENT for a grid that does
  // not match the communicator or non-positive sizes; RESOURCE_EXHAUSTED when the parts do not
  // fit; INTERNAL/UNAVAILABLE naming the failed cuBLASMp, CUDA or NCCL call.
  static absl::StatusOr<std::unique_ptr<CublasMpGemm>> Create(NcclRank& rank,
                                                              distributed::GridShape grid,
                                                              int64_t m, int64_t n, int64_t k,
                                                              int64_t block);
  ~CublasMpGemm();
  CublasMpGemm(const CublasMpGemm&) = delete;
  CublasMpGemm& operator=(const CublasMpGemm&) = delete;

  // This rank's parts (fill A and B through them, e.g. with cuda::LaunchGenerate; read C).
  const cuda::BlockCyclicPart& a_part() const { return a_part_; }
  const cuda::BlockCyclicPart& b_part() const { return b_part_; }
  const cuda::BlockCyclicPart& c_part() const { return c_part_; }
  double* a() const { return a_.get(); }
  double* b() const { return b_.get(); }
  double* c() const { return c_.get(); }
  // Bytes of device workspace cuBLASMp asked for.
  size_t workspace_bytes() const { return device_work_.bytes(); }

  // C = A B, queued on the rank's stream (returns before it completes). Collective.
  absl::Status Multiply();

 private:
  explicit CublasMpGemm(NcclRank& rank) : rank_(rank) {}

  NcclRank& rank_;
  int64_t m_ = 0;
  int64_t n_ = 0;
  int64_t k_ = 0;
  cuda::BlockCyclicPart a_part_, b_part_, c_part_;
  DeviceArray<double> a_, b_, c_;
  DeviceArray<unsigned char> device_work_;
  std::vector<unsigned char> host_work_;
  cublasMpHandle* handle_ = nullptr;
  cublasMpGrid* grid_ = nullptr;
  cublasMpMatrixDescriptor* a_desc_ = nullptr;
  cublasMpMatrixDescriptor* b_desc_ = nullptr;
  cublasMpMatrixDescriptor* c_desc_ = nullptr;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_CUBLASMP_GEMM_H_
