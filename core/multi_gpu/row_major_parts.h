// Where the row-major bytes of a matrix lie, for the copies of rectangles to or from it that a job
// over several GPUs makes (operand_rectangles.h, result_rectangles.h): at one address, or dealt in
// blocks of rows over the parts of a distributed resident matrix (RowCyclicLayout), part g's rows
// packed at an address of its own. Every part has all the matrix's columns, so rows are pitch()
// bytes apart everywhere. Addresses only: nothing here touches the bytes.
#ifndef MATRIXD_CORE_MULTI_GPU_ROW_MAJOR_PARTS_H_
#define MATRIXD_CORE_MULTI_GPU_ROW_MAJOR_PARTS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/distributed_resident_matrix.h"

namespace matrixd::multi_gpu {

class RowMajorParts {
 public:
  RowMajorParts() = default;
  // A rows x cols matrix of `element_size`-byte elements, whole at `data`.
  RowMajorParts(int64_t rows, int64_t cols, size_t element_size, std::byte* data)
      : layout_{.rows = rows, .cols = cols, .block = std::max<int64_t>(rows, 1), .parts = 1},
        element_size_(element_size),
        bases_{data} {}
  // A matrix dealt as `layout` says, part g's rows at bases[g] (null for a part of no rows).
  // REQUIRES: bases.size() == layout.parts.
  RowMajorParts(const RowCyclicLayout& layout, size_t element_size, std::vector<std::byte*> bases)
      : layout_(layout), element_size_(element_size), bases_(std::move(bases)) {}

  int64_t rows() const { return layout_.rows; }
  int64_t cols() const { return layout_.cols; }
  size_t element_size() const { return element_size_; }
  // Bytes from one row to the next within a part.
  size_t pitch() const { return static_cast<size_t>(layout_.cols) * element_size_; }

  // Rows [row0, row0 + count) as runs that each lie in one part (RowCyclicLayout::Runs).
  std::vector<RowRun> Runs(int64_t row0, int64_t count) const { return layout_.Runs(row0, count); }
  // The address of the element in column `col0` of `run`'s first row.
  std::byte* Address(const RowRun& run, int64_t col0) const {
    return bases_[static_cast<size_t>(run.part)] +
           (static_cast<size_t>(run.local_row) * static_cast<size_t>(layout_.cols) +
            static_cast<size_t>(col0)) *
               element_size_;
  }

 private:
  RowCyclicLayout layout_;
  size_t element_size_ = 0;
  std::vector<std::byte*> bases_;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_ROW_MAJOR_PARTS_H_
