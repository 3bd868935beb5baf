#include "core/multi_gpu/operand_rectangles.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {
namespace {

// The parts only give addresses to copy from: an operand's bytes are never written.
std::byte* Readable(const std::byte* data) { return const_cast<std::byte*>(data); }

}  // namespace

absl::StatusOr<OperandRectangles> OperandRectangles::Of(const MatrixView& view) {
  OperandRectangles rectangles;
  rectangles.parts_ =
      RowMajorParts(view.rows, view.cols, ElementSize(view.dtype), Readable(view.data));
  MATRIXD_ASSIGN_OR_RETURN(OperandSource source, OperandSource::Of(view));
  rectangles.sources_.push_back(std::move(source));
  return rectangles;
}

absl::StatusOr<OperandRectangles> OperandRectangles::Of(const DistributedResidentMatrix& matrix) {
  OperandRectangles rectangles;
  std::vector<std::byte*> bases;
  for (int g = 0; g < matrix.part_count(); ++g) {
    const ResidentMatrix* part = matrix.part(g);
    if (part == nullptr) {
      bases.push_back(nullptr);
      rectangles.sources_.emplace_back();
      continue;
    }
    const MatrixView view = part->view();
    if (!view.on_device() || view.data == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "part ", g, " of the distributed matrix is not in device memory (", part->device(), ")"));
    }
    bases.push_back(Readable(view.data));
    MATRIXD_ASSIGN_OR_RETURN(OperandSource source, OperandSource::Of(view));
    rectangles.sources_.push_back(std::move(source));
  }
  rectangles.parts_ =
      RowMajorParts(matrix.row_layout(), ElementSize(matrix.dtype()), std::move(bases));
  return rectangles;
}

absl::Status OperandRectangles::Copy(int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                                     void* to, int64_t ld, int device, cudaStream_t pulling) const {
  const size_t target_pitch = static_cast<size_t>(ld) * parts_.element_size();
  for (const RowRun& run : parts_.Runs(row0, rows)) {
    auto* into = static_cast<std::byte*>(to) + static_cast<size_t>(run.first) * target_pitch;
    const OperandSource& source = sources_[static_cast<size_t>(run.part)];
    MATRIXD_ASSIGN_OR_RETURN(cudaStream_t stream, source.StreamFor(device, pulling));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemcpy2DAsync(into, target_pitch, parts_.Address(run, col0), parts_.pitch(),
                          static_cast<size_t>(cols) * parts_.element_size(),
                          static_cast<size_t>(run.rows), cudaMemcpyDefault, stream));
  }
  return absl::OkStatus();
}

absl::Status OperandRectangles::Synchronize() const {
  for (const OperandSource& source : sources_) MATRIXD_RETURN_IF_ERROR(source.Synchronize());
  return absl::OkStatus();
}

}  // namespace matrixd::multi_gpu
