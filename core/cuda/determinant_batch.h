// Determinants of a batch of small matrices on one CUDA device (Backend::DeterminantBatch): one
// upload, the rows of every matrix scaled by powers of two (as the single determinant does), one
// cuBLAS getrfBatched, and one reduction kernel that turns each matrix's pivots and diagonal into
// an overflow-safe ScaledNumber; only the per-matrix summaries come back.
#ifndef MATRIXD_CORE_CUDA_DETERMINANT_BATCH_H_
#define MATRIXD_CORE_CUDA_DETERMINANT_BATCH_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cuda/dense_kernels.h"
#include "core/cuda/device_context.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "core/scaled_number.h"

namespace matrixd::cuda {

struct BatchedDeterminants {
  std::vector<ScaledNumber> values;  // one per matrix, in order
  ComputeStats stats;                // of the whole call (kernels, bytes, flops)
};

// REQUIRES: CheckDeterminantBatch(a, count, {}) is OK (core/backend.h); a is a host view.
// OUT_OF_RANGE when a member's element growth overflows the double range (as Determinant).
absl::StatusOr<BatchedDeterminants> DeterminantBatch(const MatrixView& a, int64_t count,
                                                     DeviceContext& context, JobControl* control);

// det from a summary that LaunchScaleRows and LaunchLuPivotSummary (or their batched forms)
// filled for an n x n matrix: zero for a zero row or pivot, OUT_OF_RANGE for a non-finite pivot,
// INTERNAL for a getrf argument error.
absl::StatusOr<ScaledNumber> DeterminantOfSummary(const DeterminantSummary& summary, int n);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DETERMINANT_BATCH_H_
