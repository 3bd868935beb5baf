#include "core/distributed_resident_matrix.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace matrixd {

int64_t RowCyclicLayout::LocalRows(int part) const {
  const int64_t full_blocks = rows / block;
  const int64_t rest = rows % block;
  int64_t local = (full_blocks / parts) * block;
  const int64_t extra = full_blocks % parts;  // parts [0, extra) hold one more full block
  if (part < extra) local += block;
  if (part == extra) local += rest;  // the last, partial block
  return local;
}

std::vector<RowRun> RowCyclicLayout::Runs(int64_t row0, int64_t count) const {
  std::vector<RowRun> runs;
  for (int64_t done = 0; done < count;) {
    const int64_t row = row0 + done;
    const int64_t run = std::min(count - done, block - row % block);
    runs.push_back({.part = Owner(row), .local_row = LocalRow(row), .first = done, .rows = run});
    done += run;
  }
  return runs;
}

absl::StatusOr<std::unique_ptr<DistributedResidentMatrix>> DistributedResidentMatrix::Make(
    const RowCyclicLayout& layout, DType dtype,
    std::vector<std::unique_ptr<ResidentMatrix>> parts) {
  if (layout.parts < 2 || static_cast<int>(parts.size()) != layout.parts) {
    return absl::InvalidArgumentError(absl::StrCat("a distributed matrix needs at least 2 parts, ",
                                                   "one per device; got ", parts.size(), " for ",
                                                   layout.parts));
  }
  if (layout.rows < 1 || layout.cols < 1 || layout.block < 1) {
    return absl::InvalidArgumentError(absl::StrCat("distributed layout ", layout.rows, "x",
                                                   layout.cols, " in blocks of ", layout.block));
  }
  for (int g = 0; g < layout.parts; ++g) {
    const int64_t rows = layout.LocalRows(g);
    const ResidentMatrix* part = parts[static_cast<size_t>(g)].get();
    const bool fits = rows == 0 ? part == nullptr
                                : part != nullptr && part->rows() == rows &&
                                      part->cols() == layout.cols && part->dtype() == dtype;
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat("part ", g, " of a distributed ", layout.rows,
                                                     "x", layout.cols, " ", DTypeName(dtype),
                                                     " matrix must be ", rows, "x", layout.cols));
    }
  }
  return std::unique_ptr<DistributedResidentMatrix>(
      new DistributedResidentMatrix(layout, dtype, std::move(parts)));
}

template <typename Piece>
absl::Status DistributedResidentMatrix::ForEachPiece(uint64_t offset, uint64_t size,
                                                     Piece&& piece) const {
  const uint64_t block_bytes = static_cast<uint64_t>(layout_.block) *
                               static_cast<uint64_t>(layout_.cols) * ElementSize(dtype());
  const auto parts = static_cast<uint64_t>(layout_.parts);
  uint64_t done = 0;
  while (done < size) {
    const uint64_t at = offset + done;
    const uint64_t block = at / block_bytes;
    const uint64_t within = at % block_bytes;
    const uint64_t length = std::min(size - done, block_bytes - within);
    ResidentMatrix* part = parts_[static_cast<size_t>(block % parts)].get();
    MATRIXD_RETURN_IF_ERROR(piece(*part, (block / parts) * block_bytes + within, done, length));
    done += length;
  }
  return absl::OkStatus();
}

int DistributedResidentMatrix::device_index() const { return parts_.front()->device_index(); }

std::string DistributedResidentMatrix::device() const {
  std::string description = absl::StrCat("distributed over ", layout_.parts,
                                         " devices in blocks of ", layout_.block, " rows");
  const char* separator = ": ";
  for (const auto& part : parts_) {
    if (part == nullptr) continue;
    absl::StrAppend(&description, separator, part->device());
    separator = "; ";
  }
  return description;
}

absl::Status DistributedResidentMatrix::Write(uint64_t offset, std::span<const std::byte> bytes) {
  MATRIXD_RETURN_IF_ERROR(CheckRange(offset, bytes.size()));
  return ForEachPiece(offset, bytes.size(),
                      [&](ResidentMatrix& part, uint64_t local, uint64_t from, uint64_t length) {
                        return part.Write(local, bytes.subspan(from, length));
                      });
}

absl::Status DistributedResidentMatrix::Flush() {
  absl::Status status;
  for (const auto& part : parts_) {
    if (part != nullptr) status.Update(part->Flush());
  }
  return status;
}

absl::Status DistributedResidentMatrix::Read(uint64_t offset, std::span<std::byte> out) const {
  MATRIXD_RETURN_IF_ERROR(CheckRange(offset, out.size()));
  return ForEachPiece(offset, out.size(),
                      [&](ResidentMatrix& part, uint64_t local, uint64_t to, uint64_t length) {
                        return part.Read(local, out.subspan(to, length));
                      });
}

uint64_t DistributedResidentMatrix::device_bytes() const {
  uint64_t bytes = 0;
  for (const auto& part : parts_) {
    if (part != nullptr) bytes += part->device_bytes();
  }
  return bytes;
}

MatrixView PartsView(const ResidentMatrix& matrix) {
  return {.rows = matrix.rows(),
          .cols = matrix.cols(),
          .dtype = matrix.dtype(),
          .data = nullptr,
          .space = MemorySpace::kDevice,
          .device = matrix.device_index()};
}

MatrixView DistributedResidentMatrix::view() const { return PartsView(*this); }

}  // namespace matrixd
