#include "core/distributed/block_cyclic.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

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

// Calls copy(global_offset, local_offset) for every element rank `rank` owns; both offsets count
// elements. The global matrix is row-major and the local part column-major, so the walk goes in
// square tiles: within one, the global rows and the local columns it touches stay in cache (an
// element-by-element walk down a local column strides the global matrix by a whole row per
// element, one cache and TLB miss each: 60 s for three 16384 x 16384 operands).
// Parts of at least this many elements per thread are copied by several threads.
constexpr int64_t kElementsPerThread = int64_t{1} << 22;
constexpr int64_t kMaxThreads = 8;

template <typename Copy>
void ForEachLocalElement(const BlockCyclicLayout& layout, int rank, Copy copy) {
  constexpr int64_t kTile = 64;
  const int prow = rank / layout.grid.cols;
  const int pcol = rank % layout.grid.cols;
  const int64_t local_rows = layout.LocalRows(prow);
  const int64_t local_cols = layout.LocalCols(pcol);
  const int64_t ld = layout.LocalLeadingDimension(prow);
  const int64_t b = layout.block;
  std::vector<int64_t> global_col(static_cast<size_t>(local_cols));
  for (int64_t lj = 0; lj < local_cols; ++lj) {
    global_col[lj] = ((lj / b) * layout.grid.cols + pcol) * b + lj % b;
  }
  // Bands of kTile local rows, on up to kMaxThreads threads (each band's elements are its own).
  const int64_t bands = (local_rows + kTile - 1) / kTile;
  const auto copy_bands = [&](int64_t first_band, int64_t end_band) {
    for (int64_t li0 = first_band * kTile; li0 < std::min(end_band * kTile, local_rows);
         li0 += kTile) {
      const int64_t li1 = std::min(li0 + kTile, local_rows);
      for (int64_t lj0 = 0; lj0 < local_cols; lj0 += kTile) {
        const int64_t lj1 = std::min(lj0 + kTile, local_cols);
        for (int64_t li = li0; li < li1; ++li) {
          const int64_t row_offset =
              (((li / b) * layout.grid.rows + prow) * b + li % b) * layout.cols;
          for (int64_t lj = lj0; lj < lj1; ++lj) copy(row_offset + global_col[lj], lj * ld + li);
        }
      }
    }
  };
  const int64_t threads = std::clamp<int64_t>(
      local_rows * local_cols / kElementsPerThread, 1,
      std::min<int64_t>({kMaxThreads, bands, std::max(1u, std::thread::hardware_concurrency())}));
  if (threads == 1) return copy_bands(0, bands);
  std::vector<std::jthread> workers;
  for (int64_t t = 0; t < threads; ++t) {
    workers.emplace_back(copy_bands, bands * t / threads, bands * (t + 1) / threads);
  }
}

// Copies every element rank `rank` owns between the global matrix and its local part, `kSize`
// bytes each (a constant, so that each copy is one load and one store), or `element_size` bytes.
template <size_t kSize, bool kPack>
void CopyLocal(const BlockCyclicLayout& layout, int rank, const std::byte* from, std::byte* to,
               size_t element_size) {
  const size_t size = kSize > 0 ? kSize : element_size;
  ForEachLocalElement(layout, rank, [&](int64_t g, int64_t l) {
    const size_t source = static_cast<size_t>(kPack ? g : l) * size;
    const size_t target = static_cast<size_t>(kPack ? l : g) * size;
    std::memcpy(to + target, from + source, kSize > 0 ? kSize : size);
  });
}

template <bool kPack>
void CopyLocal(const BlockCyclicLayout& layout, int rank, const std::byte* from, std::byte* to,
               size_t element_size) {
  switch (element_size) {
    case 4:
      return CopyLocal<4, kPack>(layout, rank, from, to, element_size);
    case 8:
      return CopyLocal<8, kPack>(layout, rank, from, to, element_size);
    case 16:
      return CopyLocal<16, kPack>(layout, rank, from, to, element_size);
    default:
      return CopyLocal<0, kPack>(layout, rank, from, to, element_size);
  }
}

}  // namespace

void PackLocal(const BlockCyclicLayout& layout, int rank, const std::byte* global,
               size_t element_size, std::byte* local) {
  CopyLocal<true>(layout, rank, global, local, element_size);
}

void UnpackLocal(const BlockCyclicLayout& layout, int rank, const std::byte* local,
                 size_t element_size, std::byte* global) {
  CopyLocal<false>(layout, rank, local, global, element_size);
}

}  // namespace matrixd::distributed
