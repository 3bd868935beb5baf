// Factorize of one square float32, float64, complex64 or complex128 matrix over several GPUs of
// this process, by cusolverMg (cusolvermg_lu.h, cusolvermg_cholesky.h): LU (P A = L U, with an
// optional solve by getrs) or CHOLESKY (A = L L^H from A's lower triangle, with an optional solve
// by potrs), the results the single-GPU Factorize gives (core/cuda/factorize.cc), gathered into
// host memory (the caller's destinations where given). The operands may lie in host memory or on a
// GPU (operand_source.h).
#ifndef MATRIXD_CORE_MULTI_GPU_MULTI_GPU_FACTORIZE_H_
#define MATRIXD_CORE_MULTI_GPU_MULTI_GPU_FACTORIZE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::multi_gpu {

// Factors `a` over the GPUs `devices` (distinct CUDA ordinals, at least one) in blocks of `block`
// columns. REQUIRES: CheckFactorizeDevices (core/validation.h) passes for options with
// devices = devices.size(); rhs, if given, of a's dtype with a.rows rows. A singular LU is no error
// (FactorizeResult::singular_column) unless there is a right-hand side: then, and for a matrix
// that is not positive definite, FAILED_PRECONDITION as on one GPU. UNAVAILABLE when cusolverMg
// cannot be loaded; RESOURCE_EXHAUSTED when a GPU's part does not fit; INTERNAL for CUDA and
// cuSOLVER errors. With options.keep_on_devices the factorization stays on the GPUs
// (FactorizeResult::kept, kept_factorization.h; GPU g of `devices` named as the backend's device
// index g, the backend running it over its first devices.size() GPUs) and no factor comes back.
absl::StatusOr<FactorizeResult> MultiGpuFactorize(const std::vector<int>& devices,
                                                  const MatrixView& a,
                                                  const FactorizeOptions& options,
                                                  const MatrixView* rhs, int64_t block);

// The device memory MultiGpuFactorize of an n x n matrix of `element_size`-byte elements with
// `nrhs` right-hand sides (0: none) needs on each of `gpus` GPUs: its parts of A and of the
// right-hand side with their staging, the pivots, and an allowance for cusolverMg's workspace
// (not known before the library is asked).
uint64_t MultiGpuFactorizeDeviceBytesPerGpu(int64_t n, int64_t nrhs, int gpus, int64_t block,
                                            size_t element_size);

// The device memory a solve with a factorization kept over `gpus` GPUs (kept_factorization.h)
// needs on each of them besides the factorization: its parts of the n x nrhs right-hand side with
// their staging, and an allowance for cusolverMg's workspace.
uint64_t MultiGpuSolveDeviceBytesPerGpu(int64_t n, int64_t nrhs, int gpus, int64_t block,
                                        size_t element_size);

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_MULTI_GPU_FACTORIZE_H_
