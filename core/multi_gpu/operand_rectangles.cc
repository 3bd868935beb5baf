#include "core/multi_gpu/operand_rectangles.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {

absl::StatusOr<OperandRectangles> OperandRectangles::Of(const MatrixView& view) {
  OperandRectangles rectangles;
  rectangles.rows_ = view.rows;
  rectangles.cols_ = view.cols;
  rectangles.element_size_ = ElementSize(view.dtype);
  MATRIXD_ASSIGN_OR_RETURN(OperandSource source, OperandSource::Of(view));
  rectangles.pieces_.push_back({view, std::move(source)});
  return rectangles;
}

absl::StatusOr<OperandRectangles> OperandRectangles::Of(const DistributedResidentMatrix& matrix) {
  OperandRectangles rectangles;
  rectangles.rows_ = matrix.rows();
  rectangles.cols_ = matrix.cols();
  rectangles.element_size_ = ElementSize(matrix.dtype());
  rectangles.layout_ = matrix.row_layout();
  for (int g = 0; g < matrix.part_count(); ++g) {
    const ResidentMatrix* part = matrix.part(g);
    if (part == nullptr) {
      rectangles.pieces_.emplace_back();
      continue;
    }
    const MatrixView view = part->view();
    if (!view.on_device() || view.data == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "part ", g, " of the distributed matrix is not in device memory (", part->device(), ")"));
    }
    MATRIXD_ASSIGN_OR_RETURN(OperandSource source, OperandSource::Of(view));
    rectangles.pieces_.push_back({view, std::move(source)});
  }
  return rectangles;
}

absl::Status OperandRectangles::Copy(int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                                     void* to, int64_t ld, int device, cudaStream_t pulling) const {
  const size_t width = static_cast<size_t>(cols) * element_size_;
  const size_t target_pitch = static_cast<size_t>(ld) * element_size_;
  const size_t source_pitch = static_cast<size_t>(cols_) * element_size_;
  // Runs of rows that lie in one row block: the whole rectangle when the operand is in one place.
  int64_t done = 0;
  while (done < rows) {
    const int64_t row = row0 + done;
    int64_t run = rows - done;
    const Piece* piece = &pieces_.front();
    int64_t local_row = row;
    if (layout_.has_value()) {
      run = std::min(run, layout_->block - row % layout_->block);
      piece = &pieces_[static_cast<size_t>(layout_->Owner(row))];
      local_row = layout_->LocalRow(row);
    }
    const auto* from =
        static_cast<const std::byte*>(piece->view.data) +
        (static_cast<size_t>(local_row) * static_cast<size_t>(cols_) + static_cast<size_t>(col0)) *
            element_size_;
    auto* into = static_cast<std::byte*>(to) + static_cast<size_t>(done) * target_pitch;
    MATRIXD_ASSIGN_OR_RETURN(cudaStream_t stream, piece->source.StreamFor(device, pulling));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(into, target_pitch, from, source_pitch, width,
                                                   static_cast<size_t>(run), cudaMemcpyDefault,
                                                   stream));
    done += run;
  }
  return absl::OkStatus();
}

absl::Status OperandRectangles::Synchronize() const {
  for (const Piece& piece : pieces_) MATRIXD_RETURN_IF_ERROR(piece.source.Synchronize());
  return absl::OkStatus();
}

}  // namespace matrixd::multi_gpu
