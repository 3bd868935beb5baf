#include "core/multi_gpu/result_rectangles.h"

#include <cstddef>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/distributed_resident_matrix.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {

namespace {

// The GPU holding `data` (device memory).
absl::StatusOr<int> HolderOf(const std::byte* data) {
  cudaPointerAttributes attributes{};
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaPointerGetAttributes(&attributes, data));
  return attributes.device;
}

}  // namespace

ResultRectangles ResultRectangles::Of(Matrix& matrix) {
  return ResultRectangles(RowMajorParts(matrix.rows(), matrix.cols(), ElementSize(matrix.dtype()),
                                        matrix.mutable_bytes()),
                          {});
}

absl::StatusOr<ResultRectangles> ResultRectangles::Of(ResidentMatrix& matrix) {
  const DistributedResidentMatrix* distributed = matrix.distributed();
  std::vector<std::byte*> bases;
  std::vector<int> holders;
  const int parts = distributed != nullptr ? distributed->part_count() : 1;
  for (int g = 0; g < parts; ++g) {
    ResidentMatrix* part = distributed != nullptr ? distributed->part(g) : &matrix;
    bases.push_back(part != nullptr ? part->device_data() : nullptr);
    if (part == nullptr) continue;
    if (bases.back() == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(distributed != nullptr ? absl::StrCat("part ", g, " of ") : "",
                       "the result's resident matrix is not in device memory (", part->device(),
                       part->spilled() ? ", spilled" : "", ")"));
    }
    MATRIXD_ASSIGN_OR_RETURN(const int holder, HolderOf(bases.back()));
    holders.push_back(holder);
  }
  RowMajorParts addresses =
      distributed != nullptr
          ? RowMajorParts(distributed->row_layout(), ElementSize(matrix.dtype()), std::move(bases))
          : RowMajorParts(matrix.rows(), matrix.cols(), ElementSize(matrix.dtype()), bases[0]);
  return ResultRectangles(std::move(addresses), std::move(holders));
}

absl::Status ResultRectangles::CheckWritableFrom(const std::vector<int>& devices) const {
  for (const int device : devices) {
    for (const int holder : holders_) {
      if (holder == device) continue;
      int can = 0;
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaDeviceCanAccessPeer(&can, device, holder));
      if (can == 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "GPU ", device, " has no peer access to GPU ", holder, ", which holds the result"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ResultRectangles::Copy(const void* from, int64_t ld, int64_t row0, int64_t rows,
                                    int64_t col0, int64_t cols, cudaStream_t pushing) const {
  const size_t source_pitch = static_cast<size_t>(ld) * parts_.element_size();
  for (const RowRun& run : parts_.Runs(row0, rows)) {
    const auto* source =
        static_cast<const std::byte*>(from) + static_cast<size_t>(run.first) * source_pitch;
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemcpy2DAsync(parts_.Address(run, col0), parts_.pitch(), source, source_pitch,
                          static_cast<size_t>(cols) * parts_.element_size(),
                          static_cast<size_t>(run.rows), cudaMemcpyDefault, pushing));
  }
  return absl::OkStatus();
}

}  // namespace matrixd::multi_gpu
