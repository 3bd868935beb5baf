// Which part of a 2-D block-cyclic matrix an NCCL rank holds. Ranks sit on the process grid in
// row-major order, rank r at (r / cols, r % cols): core/distributed's convention, and cuBLASMp's
// CUBLASMP_GRID_LAYOUT_ROW_MAJOR and cuSOLVERMp's CUSOLVERMP_GRID_MAPPING_ROW_MAJOR.
#ifndef MATRIXD_CORE_MULTI_GPU_BLOCK_CYCLIC_PART_H_
#define MATRIXD_CORE_MULTI_GPU_BLOCK_CYCLIC_PART_H_

#include <cstddef>

#include "core/cuda/block_cyclic_kernels.h"
#include "core/distributed/block_cyclic.h"

namespace matrixd::multi_gpu {

// REQUIRES: 0 <= rank < layout.grid.size().
inline cuda::BlockCyclicPart PartOf(const distributed::BlockCyclicLayout& layout, int rank) {
  cuda::BlockCyclicPart part;
  part.rows = layout.rows;
  part.cols = layout.cols;
  part.block = layout.block;
  part.grid_rows = layout.grid.rows;
  part.grid_cols = layout.grid.cols;
  part.grid_row = rank / layout.grid.cols;
  part.grid_col = rank % layout.grid.cols;
  part.local_rows = layout.LocalRows(part.grid_row);
  part.local_cols = layout.LocalCols(part.grid_col);
  part.ld = layout.LocalLeadingDimension(part.grid_row);
  return part;
}

// Elements to allocate for a part (at least one, so that every rank has a valid pointer).
inline size_t PartElements(const cuda::BlockCyclicPart& part) {
  const auto elements = static_cast<size_t>(part.ld * part.local_cols);
  return elements > 0 ? elements : 1;
}

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_BLOCK_CYCLIC_PART_H_
