// Copies rectangles of a row-major operand into device buffers, for a job over several GPUs that
// cuts its operands into blocks (Cannon's scatter). The operand is host memory or one GPU's memory
// (each copy as OperandSource says: pulled by the target GPU, or pushed by the holder), or a
// distributed resident matrix (core/distributed_resident_matrix.h) read in place: each run of a
// rectangle's rows that lies in one row block is copied straight from the part holding it, on a
// stream of that part's GPU, so nothing goes through the host or through one gathering GPU.
#ifndef MATRIXD_CORE_MULTI_GPU_OPERAND_RECTANGLES_H_
#define MATRIXD_CORE_MULTI_GPU_OPERAND_RECTANGLES_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/distributed_resident_matrix.h"
#include "core/matrix.h"
#include "core/multi_gpu/operand_source.h"
#include "core/multi_gpu/row_major_parts.h"

namespace matrixd::multi_gpu {

class OperandRectangles {
 public:
  // The rectangles of `view` (host memory or one GPU). INTERNAL for CUDA errors.
  static absl::StatusOr<OperandRectangles> Of(const MatrixView& view);
  // The rectangles of `matrix`, read from its parts where they lie. INVALID_ARGUMENT when a part
  // is not in device memory; INTERNAL for CUDA errors.
  static absl::StatusOr<OperandRectangles> Of(const DistributedResidentMatrix& matrix);

  int64_t rows() const { return parts_.rows(); }
  int64_t cols() const { return parts_.cols(); }

  // Queues the copy of rows [row0, row0 + rows) x columns [col0, col0 + cols) into `to` (row-major,
  // leading dimension `ld` elements) on GPU `device`, whose stream `pulling` copies from host
  // memory. REQUIRES: the rectangle lies inside the operand; `to` is ready to be written on any
  // stream (the caller has synchronised its earlier work). Leaves an unspecified device current.
  absl::Status Copy(int64_t row0, int64_t rows, int64_t col0, int64_t cols, void* to, int64_t ld,
                    int device, cudaStream_t pulling) const;

  // Waits for every copy queued on a holder's stream (those on `pulling` streams are the caller's).
  absl::Status Synchronize() const;

 private:
  RowMajorParts parts_;  // the whole operand, or a distributed one's parts (read only)
  // Where each part's rows are copied from (one for a whole operand; a part of no rows has a
  // source that is never used).
  std::vector<OperandSource> sources_;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_OPERAND_RECTANGLES_H_
