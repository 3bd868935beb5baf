// A CUDA backend that can also spread one product or one determinant over several of its GPUs:
// Multiply with MultiplyOptions::devices > 1 (or method kCannon) runs Cannon's algorithm over
// NCCL (core/multi_gpu/cannon_gemm.h; float32, float64, complex64, complex128, no TF32), and
// Determinant with DeterminantOptions::devices > 1 (float64, LU, modulus 0) runs MultiGpuLu
// (core/multi_gpu/multi_gpu_lu.h), on the first `devices` GPUs of the backend; everything else goes
// to the wrapped backend unchanged. cuBLASMp (method kCublasMp) needs one process per GPU: it
// answers UNIMPLEMENTED here and says how to start the server with one MPI rank per GPU
// (core/distributed runs it there).
//
// All three read their operands where they lie, host memory or a GPU (operand_source.h), so a
// resident operand needs no copy to the host; a distributed resident matrix
// (MultiplyOptions::distributed_a/_b, DeterminantOptions::distributed) is read from its parts.
// Cannon writes C into MultiplyOptions::output when that is a resident matrix in device memory of
// any of the GPUs, or a distributed one (its blocks' rows go straight to the parts owning them),
// and then returns no C; otherwise C comes back to host memory. Factorize with devices > 1 runs
// cusolverMg (multi_gpu_factorize.h) and, with FactorizeOptions::keep_on_devices, leaves the
// factorization on the GPUs (FactorizeResult::kept); Solve of such a kept factorization
// (FactorizationView::kept) runs on its GPUs, every other Solve on the wrapped backend. The per-GPU
// bytes below are what each of the `devices` GPUs needs: the server reserves them on every one
// (JobSpec::device_span).
#ifndef MATRIXD_CORE_MULTI_GPU_MULTI_GPU_BACKEND_H_
#define MATRIXD_CORE_MULTI_GPU_MULTI_GPU_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.h"

namespace matrixd::multi_gpu {

// Wraps `cuda` (REQUIRES: not null), whose GPUs are the CUDA ordinals `devices` (in order) and
// whose memory limit per device is `memory_limit` (Cannon's blocks come from the same pools).
std::unique_ptr<Backend> WithMultiGpuProducts(std::unique_ptr<Backend> cuda,
                                              std::vector<int> devices,
                                              const DeviceMemoryLimit& memory_limit = {});

// The device memory Cannon's product of an m x k and a k x n matrix of `element_size`-byte
// elements (float64 by default) needs on each of `gpus` GPUs (its blocks: two buffers each of A
// and B, and C, per grid position).
uint64_t CannonDeviceBytesPerGpu(int64_t m, int64_t k, int64_t n, int gpus,
                                 size_t element_size = sizeof(double));

// The device memory MultiGpuLu of an n x n matrix of `dtype` (float64 by default) with panels of
// `block` columns needs on each of `gpus` GPUs: the largest part and two panel buffers when
// gpus > 1, in the LU's element type (complex128 for the complex dtypes, else float64), and for
// float32 and complex64 the panel of the operand that is widened from (workspaces apart).
uint64_t MultiGpuLuDeviceBytesPerGpu(int64_t n, int gpus, int64_t block,
                                     DType dtype = DType::kFloat64);

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_MULTI_GPU_BACKEND_H_
