#include "core/distributed/block_cyclic.h"

#include <algorithm>
#include <cstring>

namespace matrixd::distributed {

GridShape ChooseGridShape(int ranks) {
  int rows = 1;
  for (int r = 1; r * r <= ranks; ++r) {
    if (ranks % r == 0) rows = r;
  }
  return {.rows = rows, .cols = ranks / rows};
}

int64_t LocalExtent(int64_t n, int64_t block, int coord, int procs) {
  const int64_t blocks = n / block;
  int64_t extent = (blocks / procs) * block;
  const int64_t extra_blocks = blocks % procs;
  if (coord < extra_blocks) {
    extent += block;
  } else if (coord == extra_blocks) {
    extent += n % block;
  }
  return extent;
}

int OwnerOf(int64_t global, int64_t block, int procs) {
  return static_cast<int>((global / block) % procs);
}

int64_t LocalIndexOf(int64_t global, int64_t block, int procs) {
  return (global / (block * procs)) * block + global % block;
}

int64_t BlockCyclicLayout::LocalLeadingDimension(int prow) const {
  return std::max<int64_t>(1, LocalRows(prow));
}

int64_t BlockCyclicLayout::LocalElements(int rank) const {
  return LocalRows(rank / grid.cols) * LocalCols(rank % grid.cols);
}

namespace {

// Calls copy(global_offset, local_offset) for every element rank `rank` owns, in local
// column-major order; both offsets count elements.
template <typename Copy>
void ForEachLocalElement(const BlockCyclicLayout& layout, int rank, Copy copy) {
  const int prow = rank / layout.grid.cols;
  const int pcol = rank % layout.grid.cols;
  const int64_t local_rows = layout.LocalRows(prow);
  const int64_t local_cols = layout.LocalCols(pcol);
  const int64_t ld = layout.LocalLeadingDimension(prow);
  const int64_t b = layout.block;
  for (int64_t lj = 0; lj < local_cols; ++lj) {
    const int64_t j = ((lj / b) * layout.grid.cols + pcol) * b + lj % b;
    for (int64_t li = 0; li < local_rows; ++li) {
      const int64_t i = ((li / b) * layout.grid.rows + prow) * b + li % b;
      copy(i * layout.cols + j, lj * ld + li);
    }
  }
}

}  // namespace

void PackLocal(const BlockCyclicLayout& layout, int rank, const std::byte* global,
               size_t element_size, std::byte* local) {
  ForEachLocalElement(layout, rank, [&](int64_t g, int64_t l) {
    std::memcpy(local + static_cast<size_t>(l) * element_size,
                global + static_cast<size_t>(g) * element_size, element_size);
  });
}

void UnpackLocal(const BlockCyclicLayout& layout, int rank, const std::byte* local,
                 size_t element_size, std::byte* global) {
  ForEachLocalElement(layout, rank, [&](int64_t g, int64_t l) {
    std::memcpy(global + static_cast<size_t>(g) * element_size,
                local + static_cast<size_t>(l) * element_size, element_size);
  });
}

}  // namespace matrixd::distributed
