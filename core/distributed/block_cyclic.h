// ScaLAPACK's 2-D block-cyclic layout (square blocks, first block on process (0, 0)): which
// process owns which element, how much each holds, and the copies between a whole row-major
// matrix and one process's local column-major part. No MPI: the arithmetic alone.
#ifndef MATRIXD_CORE_DISTRIBUTED_BLOCK_CYCLIC_H_
#define MATRIXD_CORE_DISTRIBUTED_BLOCK_CYCLIC_H_

#include <cstddef>
#include <cstdint>

namespace matrixd::distributed {

// A process grid: `rows` x `cols` processes, rank r at (r / cols, r % cols) (BLACS "Row" order).
struct GridShape {
  int rows = 1;
  int cols = 1;
  int size() const { return rows * cols; }
};

// The most nearly square grid of exactly `ranks` processes, rows <= cols (2 -> 1x2, 4 -> 2x2,
// 6 -> 2x3, 7 -> 1x7). REQUIRES: ranks >= 1.
GridShape ChooseGridShape(int ranks);

// Rows (or columns) of an extent-`n` dimension cut into `block`-sized blocks dealt round-robin
// over `procs` processes that process `coord` holds (ScaLAPACK's NUMROC with source 0).
// REQUIRES: n >= 0, block >= 1, 0 <= coord < procs.
int64_t LocalExtent(int64_t n, int64_t block, int coord, int procs);

// The local index of global index `global` on the process that owns it, and that process.
int OwnerOf(int64_t global, int64_t block, int procs);
int64_t LocalIndexOf(int64_t global, int64_t block, int procs);

// A rows x cols matrix laid out block-cyclically with `block` x `block` blocks over `grid`.
struct BlockCyclicLayout {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t block = 64;
  GridShape grid;

  int64_t LocalRows(int prow) const { return LocalExtent(rows, block, prow, grid.rows); }
  int64_t LocalCols(int pcol) const { return LocalExtent(cols, block, pcol, grid.cols); }
  // The local leading dimension ScaLAPACK wants (at least 1, even for an empty part).
  int64_t LocalLeadingDimension(int prow) const;
  // Elements of the local part of rank `rank` (LocalRows * LocalCols).
  int64_t LocalElements(int rank) const;
};

// Copies the elements that rank `rank` owns from `global` (row-major, layout.rows x layout.cols,
// elements of `element_size` bytes) into `local` (column-major with leading dimension
// LocalLeadingDimension). REQUIRES: local holds LocalElements(rank) elements.
void PackLocal(const BlockCyclicLayout& layout, int rank, const std::byte* global,
               size_t element_size, std::byte* local);

// The inverse: writes rank `rank`'s local part into its places of the row-major `global`.
void UnpackLocal(const BlockCyclicLayout& layout, int rank, const std::byte* local,
                 size_t element_size, std::byte* global);

}  // namespace matrixd::distributed

#endif  // MATRIXD_CORE_DISTRIBUTED_BLOCK_CYCLIC_H_
