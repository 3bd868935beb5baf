// A resident matrix distributed over several devices of one process (layout = DISTRIBUTED): its
// rows dealt in blocks of `block` rows, round-robin, block k on part k mod R, each part a resident
// matrix of its own on its device holding its blocks' rows in order, row-major. In the
// column-major terms of the multi-GPU LU (core/multi_gpu/multi_gpu_lu.h), which factors A^T, part
// g is exactly its part g: 1-D block-column cyclic panels of A^T over a 1 x R grid, leading
// dimension cols; so the LU reads the parts where they lie.
//
// Writes and reads take the packed row-major bytes of the whole matrix, as for any resident
// matrix, and go to (come from) the parts owning those rows. A distributed matrix is never
// spilled. Thread-safety as ResidentMatrix: Writes of disjoint byte ranges may run at once.
#ifndef MATRIXD_CORE_DISTRIBUTED_RESIDENT_MATRIX_H_
#define MATRIXD_CORE_DISTRIBUTED_RESIDENT_MATRIX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/generator_entry.h"
#include "core/resident_matrix.h"

namespace matrixd {

// Rows per block of a distributed resident matrix: the multi-GPU determinant's panel width
// (core/multi_gpu/multi_gpu_backend.cc takes it from here), so that its LU needs no reshuffle.
inline constexpr int64_t kDistributedRowBlock = 512;

// A run of consecutive rows of a range that one part holds consecutively (RowCyclicLayout::Runs):
// the range's rows [first, first + rows), which are part `part`'s rows from `local_row` on.
struct RowRun {
  int part = 0;
  int64_t local_row = 0;
  int64_t first = 0;
  int64_t rows = 0;
};

// Where the rows of a rows x cols matrix go when dealt in blocks of `block` rows over `parts`
// parts. REQUIRES (of every member function): rows, cols, block, parts >= 1. With parts = 1 and
// block = rows it describes a matrix that lies whole in one place.
struct RowCyclicLayout {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t block = kDistributedRowBlock;
  int parts = 1;

  // The part holding global row `row`, and that row's index among the part's rows.
  int Owner(int64_t row) const { return static_cast<int>((row / block) % parts); }
  int64_t LocalRow(int64_t row) const { return (row / block / parts) * block + row % block; }
  // The number of rows part `part` holds (0 when there are fewer blocks than parts).
  int64_t LocalRows(int part) const;
  // Part `part`'s local rows as global rows (GeneratedRows::Global).
  GeneratedRows RowsOf(int part) const { return {.block = block, .stride = parts, .offset = part}; }
  // Rows [row0, row0 + count) cut where a block ends, in order (none when count is 0).
  // REQUIRES: 0 <= row0, count >= 0, row0 + count <= rows.
  std::vector<RowRun> Runs(int64_t row0, int64_t count) const;
};

// A device view of `matrix`'s shape with null data on its device_index(): the view() of a resident
// matrix that has no one address (its parts are read in place by the operations that take it).
MatrixView PartsView(const ResidentMatrix& matrix);

class DistributedResidentMatrix final : public ResidentMatrix {
 public:
  // Takes `parts` (layout.parts of them; part g a layout.LocalRows(g) x layout.cols matrix of
  // `dtype`, or null when that is 0 rows). INVALID_ARGUMENT for fewer than 2 parts, or a part
  // missing or of the wrong shape or dtype.
  static absl::StatusOr<std::unique_ptr<DistributedResidentMatrix>> Make(
      const RowCyclicLayout& layout, DType dtype,
      std::vector<std::unique_ptr<ResidentMatrix>> parts);

  const RowCyclicLayout& row_layout() const { return layout_; }
  int part_count() const { return layout_.parts; }
  // Part g (null when it holds no rows). The matrix keeps ownership.
  ResidentMatrix* part(int g) const { return parts_[static_cast<size_t>(g)].get(); }

  // The first part's device.
  int device_index() const override;
  // "distributed over R devices in blocks of B rows: <part 0's device>; <part 1's device>; ...".
  std::string device() const override;
  absl::Status Write(uint64_t offset, std::span<const std::byte> bytes) override;
  absl::Status Flush() override;
  absl::Status Read(uint64_t offset, std::span<std::byte> out) const override;
  uint64_t device_bytes() const override;
  MatrixView view() const override;
  const DistributedResidentMatrix* distributed() const override { return this; }

 private:
  DistributedResidentMatrix(const RowCyclicLayout& layout, DType dtype,
                            std::vector<std::unique_ptr<ResidentMatrix>> parts)
      : ResidentMatrix(layout.rows, layout.cols, dtype),
        layout_(layout),
        parts_(std::move(parts)) {}

  // Calls piece(part, local offset, offset into the range, size) for each run of the global byte
  // range [offset, offset + size) that lies in one block of rows, in order.
  template <typename Piece>
  absl::Status ForEachPiece(uint64_t offset, uint64_t size, Piece&& piece) const;

  const RowCyclicLayout layout_;
  const std::vector<std::unique_ptr<ResidentMatrix>> parts_;
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_DISTRIBUTED_RESIDENT_MATRIX_H_
