// C = A B in float32, float64, complex64 or complex128 over several GPUs of one process by
// Cannon's algorithm (the seed's multi-GPU product): the GPUs hold a q x q grid of square blocks
// (padded with zeros to q * nb), A's block rows skewed left and B's block columns skewed up once,
// then q rounds of a local cuBLAS GEMM per block while NCCL sends each A block one step left and
// each B block one step up into a second buffer, so that the transfers overlap the products. q is
// the smallest with q^2 a multiple of the GPU count (1 GPU: 1, 2: 2, 4: 2, 8: 4); block (i, j)
// lives on GPU (i q + j) mod R, and a shift between blocks of one GPU is a device copy. The blocks
// come from each device's memory resource (the stream-ordered pool and cap the CUDA backend's
// contexts allocate through). The block products are cuBLAS's gemm of the dtype in its default math
// mode: float32 never runs on TF32 tensor cores here. C's blocks are gathered into host memory, or
// into a resident matrix in device memory (one GPU's, or a distributed one's parts) straight from
// the GPUs holding them (result_rectangles.h), so that a kept product stays on the GPUs.
#ifndef MATRIXD_CORE_MULTI_GPU_CANNON_GEMM_H_
#define MATRIXD_CORE_MULTI_GPU_CANNON_GEMM_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/backend.h"
#include "core/distributed_resident_matrix.h"
#include "core/matrix.h"
#include "core/resident_matrix.h"

namespace matrixd::multi_gpu {

// The side of Cannon's block grid for `gpus` GPUs (see above). REQUIRES: gpus >= 1.
int CannonGridSide(int gpus);

struct CannonTimes {
  double scatter_seconds = 0.0;  // the operands to the GPUs, with the initial skew
  double rounds_seconds = 0.0;   // the q rounds of GEMM + shifts (the figure to compare)
  double gather_seconds = 0.0;   // C's blocks into host memory or the output matrix
};

// An operand of CannonGemm: `view` (host memory or any one GPU, see operand_source.h) or, when
// `distributed` is set, that distributed resident matrix read from its parts where they lie, each
// block's rows copied straight from the GPUs holding them (operand_rectangles.h); `view` then gives
// only its shape and dtype. The parts may lie on GPUs that are not among the product's devices.
struct CannonOperand {
  MatrixView view;
  const DistributedResidentMatrix* distributed = nullptr;
};

// Whether CannonGemm on `devices` can write an m x n product of `dtype` into `output`: a resident
// matrix of that shape and dtype whose bytes are in device memory (not spilled), on one GPU or,
// for a DistributedResidentMatrix, in parts each on a GPU, where every GPU of `devices` may write
// (its own memory, or with peer access; result_rectangles.h).
bool CannonWritesInto(ResidentMatrix& output, int64_t m, int64_t n, DType dtype,
                      const std::vector<int>& devices);

// C = A B, A m x k and B k x n matrices of one floating dtype (row-major; see CannonOperand), C of
// that dtype, on `devices` (CUDA ordinals, one NCCL rank each); C in host memory, or, when
// `output` is not null, written into `output` (REQUIRES: it outlives the call and nothing else
// uses it meanwhile) and the returned matrix empty. `times`, when not null, gets the phases' wall
// times; the blocks count against `memory_limit` of each device, as the CUDA backend's do
// (RESOURCE_EXHAUSTED beyond it). Errors of CUDA, cuBLAS and NCCL as UNAVAILABLE/INTERNAL naming
// the call; INVALID_ARGUMENT for other or mixed dtypes, shapes that do not agree (also a
// distributed matrix that is not its view's shape), no device, or an output that
// CannonWritesInto refuses.
absl::StatusOr<Matrix> CannonGemm(const std::vector<int>& devices, const CannonOperand& a,
                                  const CannonOperand& b, CannonTimes* times = nullptr,
                                  const DeviceMemoryLimit& memory_limit = {},
                                  ResidentMatrix* output = nullptr);
// The same of two views.
absl::StatusOr<Matrix> CannonGemm(const std::vector<int>& devices, const MatrixView& a,
                                  const MatrixView& b, CannonTimes* times = nullptr,
                                  const DeviceMemoryLimit& memory_limit = {});

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_CANNON_GEMM_H_
