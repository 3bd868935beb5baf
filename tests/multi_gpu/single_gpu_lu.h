// The one-GPU baseline the multi-GPU LU benches measure against: the whole n x n matrix on the
// current device, made from a seed (cuda::LaunchGenerate, the same global matrix the distributed
// runs make) and factored by cuSOLVER's cusolverDnXgetrf, with its determinant.
#ifndef MATRIXD_TESTS_MULTI_GPU_SINGLE_GPU_LU_H_
#define MATRIXD_TESTS_MULTI_GPU_SINGLE_GPU_LU_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "core/cuda/block_cyclic_kernels.h"
#include "core/multi_gpu/pivot_counts.h"

namespace matrixd::multi_gpu {

// Factors `matrix` (from `seed`, order n) `runs` times on the current device on `stream`, each
// time freshly generated; calls on_run(run, seconds of the factorisation alone, determinant)
// after each. RESOURCE_EXHAUSTED when it does not fit; INTERNAL for CUDA/cuSOLVER errors.
absl::Status SingleGpuLu(
    int64_t n, cuda::GeneratedMatrix matrix, uint64_t seed, cudaStream_t stream, int runs,
    const std::function<void(int, double, const DistributedDeterminant&)>& on_run);

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_TESTS_MULTI_GPU_SINGLE_GPU_LU_H_
