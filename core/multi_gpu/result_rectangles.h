// Copies device blocks into rectangles of a row-major result, for a job over several GPUs that
// computes its result in blocks (Cannon's gather): the inverse of operand_rectangles.h. The result
// is host memory, a resident matrix on one GPU, or a distributed resident matrix
// (core/distributed_resident_matrix.h) written in place: each run of a rectangle's rows that lies
// in one row block goes straight from the GPU holding the block into the part owning those rows,
// so a result kept on the GPUs never goes through host memory.
#ifndef MATRIXD_CORE_MULTI_GPU_RESULT_RECTANGLES_H_
#define MATRIXD_CORE_MULTI_GPU_RESULT_RECTANGLES_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/matrix.h"
#include "core/multi_gpu/row_major_parts.h"
#include "core/resident_matrix.h"

namespace matrixd::multi_gpu {

class ResultRectangles {
 public:
  // The rectangles of `matrix` (host memory). REQUIRES: it outlives the copies.
  static ResultRectangles Of(Matrix& matrix);
  // The rectangles of `matrix`: a resident matrix in one GPU's memory, or a distributed one whose
  // parts all are. INVALID_ARGUMENT naming the matrix or part that is not in device memory (on
  // the host, or spilled). REQUIRES: it outlives the copies.
  static absl::StatusOr<ResultRectangles> Of(ResidentMatrix& matrix);

  int64_t rows() const { return parts_.rows(); }
  int64_t cols() const { return parts_.cols(); }

  // OK when every GPU of `devices` (CUDA ordinals) may write the result's memory: its own, or
  // another GPU's with peer access (whose pool memory it may then write, see
  // core/cuda/cuda_memory_resource.h); host memory always. FAILED_PRECONDITION naming the two
  // GPUs otherwise; INTERNAL for CUDA errors.
  absl::Status CheckWritableFrom(const std::vector<int>& devices) const;

  // Queues the copy of `from` (rows x cols, row-major with leading dimension `ld` elements, in the
  // memory of the GPU whose stream `pushing` is, which must be current) into rows
  // [row0, row0 + rows) x columns [col0, col0 + cols) of the result, on `pushing`. REQUIRES: the
  // rectangle lies inside the result. INTERNAL for CUDA errors.
  absl::Status Copy(const void* from, int64_t ld, int64_t row0, int64_t rows, int64_t col0,
                    int64_t cols, cudaStream_t pushing) const;

 private:
  ResultRectangles(RowMajorParts parts, std::vector<int> holders)
      : parts_(std::move(parts)), holders_(std::move(holders)) {}

  RowMajorParts parts_;
  std::vector<int> holders_;  // the GPUs (CUDA ordinals) holding the bytes; none for host memory
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_RESULT_RECTANGLES_H_
