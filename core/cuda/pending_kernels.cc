// TEMPORARY: UNIMPLEMENTED stand-ins for the CUDA operations whose own .cu files are still being
// written, so that the backend and the test binaries link meanwhile. Delete each group as soon
// as its real file exists (a duplicate definition breaks the link); delete the file when empty.
#include "absl/status/status.h"
#include "core/cuda/block_sparse.h"
#include "core/cuda/permanent.h"
#include "core/cuda/uint32_gemm.h"

namespace matrixd::cuda {

// core/cuda/permanent.cu
absl::StatusOr<PermanentResult> Permanent(const MatrixView&, const PermanentOptions&,
                                          DeviceContext&, JobControl*) {
  return absl::UnimplementedError("cuda::Permanent is not implemented yet");
}

// core/cuda/block_sparse.cu
absl::StatusOr<MultiplyResult> BlockSparseMultiply(const MatrixView&, const MatrixView&,
                                                   const MultiplyOptions&, DeviceContext&,
                                                   JobControl*) {
  return absl::UnimplementedError("cuda::BlockSparseMultiply is not implemented yet");
}

// core/cuda/uint32_gemm.cu
absl::StatusOr<MultiplyResult> Uint32Multiply(const MatrixView&, const MatrixView&,
                                              const MultiplyOptions&, DeviceContext&, JobControl*) {
  return absl::UnimplementedError("cuda::Uint32Multiply is not implemented yet");
}

}  // namespace matrixd::cuda
