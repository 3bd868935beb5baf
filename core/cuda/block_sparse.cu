// Block-sparse products on the GPU. op(A) and op(B) are made row-major on the device, a scan
// kernel marks their non-zero b x b blocks in one byte per block, and the host (from those small
// maps) lists the pairs A(i,k) B(k,j) of non-zero blocks:
// - floating types: cuBLAS gemmBatched over pointer arrays of the pairs, accumulating into C with
//   beta = 1, in rounds that each write a C block at most once (see BlockProducts), so no two
//   products add into one C block at once.
// - UINT32: the tiled kernel of uint32_tile_gemm.cuh (cuBLAS has no wrapping integer GEMM),
//   which skips every 16-deep slab of a 128 x 128 tile of C that meets no pair of non-zero
//   blocks.
// C blocks with no pair stay zero.
#include <cuComplex.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/block_sparse.h"
#include "core/cuda/blocking_event.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/dense_kernels.h"
#include "core/cuda/device_element.cuh"
#include "core/cuda/device_view.h"
#include "core/cuda/freivalds.h"
#include "core/cuda/kernel_timer.h"
#include "core/cuda/library_types.h"
#include "core/cuda/scoped_math_mode.h"
#include "core/cuda/uint32_tile_gemm.cuh"

namespace matrixd::cuda {
namespace {

absl::Status Cancelled() { return absl::CancelledError("block-sparse multiplication cancelled"); }

int64_t CeilDiv(int64_t x, int64_t d) { return x / d + (x % d != 0 ? 1 : 0); }

template <typename T>
constexpr bool kIsComplexType = !std::is_arithmetic_v<T>;

// ---- The scan ----

constexpr int kScanThreads = 256;

template <typename T>
__device__ __forceinline__ bool IsNonZero(T x) {
  return x != T(0);
}
template <>
__device__ __forceinline__ bool IsNonZero(float2 x) {
  return x.x != 0.0f || x.y != 0.0f;
}
template <>
__device__ __forceinline__ bool IsNonZero(double2 x) {
  return x.x != 0.0 || x.y != 0.0;
}

// flags[(i / block) * block_cols + j / block] = 1 for every non-zero x(i, j) of the row-major
// rows x cols matrix x (flags zeroed before). A thread keeps one column j and walks down it with
// stride gridDim.y, so that a warp reads consecutive entries of a row and the block row index is
// updated by addition instead of a 64-bit division per entry. Threads that find a non-zero entry
// of one block all write the same 1: the race is benign.
template <typename T>
__global__ void __launch_bounds__(kScanThreads)
    MarkNonZeroBlocksKernel(const T* __restrict__ x, int64_t rows, int64_t cols, int64_t block,
                            int64_t block_cols, uint8_t* __restrict__ flags) {
  const int64_t row_stride = gridDim.y;
  const int64_t stride_blocks = row_stride / block;
  const int64_t stride_rest = row_stride % block;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * kScanThreads + threadIdx.x; j < cols;
       j += static_cast<int64_t>(gridDim.x) * kScanThreads) {
    uint8_t* column_flags = flags + j / block;
    int64_t i = blockIdx.y;
    int64_t block_row = i / block;
    int64_t within = i % block;
    for (; i < rows; i += row_stride) {
      if (IsNonZero(x[i * cols + j])) {
        uint8_t* flag = column_flags + block_row * block_cols;
        if (*flag == 0) *flag = 1;
      }
      block_row += stride_blocks;
      within += stride_rest;
      if (within >= block) {
        within -= block;
        ++block_row;
      }
    }
  }
}

template <typename T>
cudaError_t LaunchMarkNonZeroBlocks(const void* x, int64_t rows, int64_t cols, int64_t block,
                                    uint8_t* flags, int multiprocessors, cudaStream_t stream) {
  using E = DeviceType<T>;
  // Enough blocks for ~32 per multiprocessor; the rows are shared out across grid.y.
  const int64_t column_blocks = std::min<int64_t>(CeilDiv(cols, kScanThreads), int64_t{1} << 20);
  const int64_t row_blocks = std::clamp<int64_t>(32 * int64_t{multiprocessors} / column_blocks, 1,
                                                 std::min<int64_t>(rows, 65535));
  const dim3 grid(static_cast<unsigned>(column_blocks), static_cast<unsigned>(row_blocks));
  MarkNonZeroBlocksKernel<E><<<grid, kScanThreads, 0, stream>>>(
      static_cast<const E*>(x), rows, cols, block, CeilDiv(cols, block), flags);
  return cudaGetLastError();
}

// ---- Shapes, operands, maps ----

struct Problem {
  int64_t m = 0;  // op(A) is m x k, op(B) k x n
  int64_t k = 0;
  int64_t n = 0;
  int64_t block = 0;
  int64_t block_rows = 0;   // ceil(m / block)
  int64_t block_depth = 0;  // ceil(k / block)
  int64_t block_cols = 0;   // ceil(n / block)

  int64_t Extent(int64_t index, int64_t size) const {
    return std::min(block, size - index * block);
  }
};

// op(x) in device memory, row-major: the upload itself, or its transpose in `storage`.
absl::StatusOr<const void*> UploadOperand(const MatrixView& x, bool transpose,
                                          DeviceContext& context, DeviceBuffer& upload,
                                          DeviceBuffer& storage) {
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer buffer, context.Allocate(x.byte_size()));
  upload = std::move(buffer);
  MATRIXD_RETURN_IF_ERROR(context.Upload(x.data, upload, x.byte_size()));
  if (!transpose) return static_cast<const void*>(upload.data());
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer transposed, context.Allocate(x.byte_size()));
  storage = std::move(transposed);
  // x row-major rows x cols is, read column-major, the cols x rows matrix x^T; its transpose
  // written column-major with leading dimension rows is x^T row-major.
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchTranspose(upload.data(), x.cols, x.rows, x.cols,
                                               storage.data(), x.rows, ElementSize(x.dtype),
                                               context.stream()));
  return static_cast<const void*>(storage.data());
}

// One byte per block of the row-major rows x cols device matrix x: 1 where the block holds a
// non-zero entry. Appends the scan kernel's time to stats->kernels as "block_scan".
template <typename T>
absl::StatusOr<std::vector<uint8_t>> NonZeroBlocks(const void* x, int64_t rows, int64_t cols,
                                                   int64_t block, DeviceContext& context,
                                                   ComputeStats* stats) {
  std::vector<uint8_t> flags(static_cast<size_t>(CeilDiv(rows, block) * CeilDiv(cols, block)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_flags, context.Allocate(flags.size()));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(device_flags.data(), 0, flags.size(), context.stream()));
  MATRIXD_ASSIGN_OR_RETURN(KernelTimer scan_timer, KernelTimer::Start(context.stream()));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchMarkNonZeroBlocks<T>(x, rows, cols, block, device_flags.as<uint8_t>(),
                                 context.properties().multiProcessorCount, context.stream()));
  MATRIXD_RETURN_IF_ERROR(scan_timer.Stop());
  MATRIXD_RETURN_IF_ERROR(context.Download(device_flags, flags.data(), flags.size()));
  // The scan reads every entry (and writes a byte per block, negligible).
  const uint64_t bytes = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * sizeof(T);
  MATRIXD_RETURN_IF_ERROR(scan_timer.AppendTo(stats, "block_scan", bytes, 0.0));
  return flags;
}

// For each k-block, the non-zero blocks of op(A) in that block column and of op(B) in that block
// row.
struct PairLists {
  std::vector<std::vector<int64_t>> a_rows;  // per bk: bi with A(bi, bk) != 0
  std::vector<std::vector<int64_t>> b_cols;  // per bk: bj with B(bk, bj) != 0
};

PairLists ListPairs(const Problem& p, const std::vector<uint8_t>& a_flags,
                    const std::vector<uint8_t>& b_flags, MultiplyResult& result,
                    double flops_per_update) {
  PairLists lists;
  lists.a_rows.resize(static_cast<size_t>(p.block_depth));
  lists.b_cols.resize(static_cast<size_t>(p.block_depth));
  for (int64_t bk = 0; bk < p.block_depth; ++bk) {
    double width = 0.0;
    for (int64_t bj = 0; bj < p.block_cols; ++bj) {
      if (b_flags[bk * p.block_cols + bj] == 0) continue;
      lists.b_cols[bk].push_back(bj);
      width += static_cast<double>(p.Extent(bj, p.n));
    }
    for (int64_t bi = 0; bi < p.block_rows; ++bi) {
      if (a_flags[bi * p.block_depth + bk] == 0) continue;
      lists.a_rows[bk].push_back(bi);
      // Counted as the CPU counts them (core/cpu/block_sparse.cc).
      result.block_products += static_cast<int64_t>(lists.b_cols[bk].size());
      result.stats.flops += flops_per_update * static_cast<double>(p.Extent(bi, p.m)) *
                            static_cast<double>(p.Extent(bk, p.k)) * width;
    }
  }
  // The CPU adds the same terms in another order; they are integers, so both sums are exact
  // below 2^53.
  return lists;
}

// ---- UINT32 ----

absl::Status Uint32Products(const Problem& p, const uint32_t* a, const uint32_t* b, uint32_t* c,
                            const std::vector<uint8_t>& a_flags,
                            const std::vector<uint8_t>& b_flags, DeviceContext& context,
                            JobControl* control) {
  const int64_t tile_rows = CeilDiv(p.m, kGemmTile);
  const int64_t tile_cols = CeilDiv(p.n, kGemmTile);
  // a_tiles[tr][bk]: some block of op(A) in tile row tr's rows and block column bk is non-zero;
  // b_tiles[bk][tc] likewise for op(B).
  std::vector<uint8_t> a_tiles(static_cast<size_t>(tile_rows * p.block_depth), 0);
  for (int64_t tr = 0; tr < tile_rows; ++tr) {
    const int64_t first = tr * kGemmTile / p.block;
    const int64_t last = (std::min(p.m, (tr + 1) * kGemmTile) - 1) / p.block;
    for (int64_t bi = first; bi <= last; ++bi) {
      for (int64_t bk = 0; bk < p.block_depth; ++bk) {
        a_tiles[tr * p.block_depth + bk] |= a_flags[bi * p.block_depth + bk];
      }
    }
  }
  std::vector<uint8_t> b_tiles(static_cast<size_t>(p.block_depth * tile_cols), 0);
  for (int64_t tc = 0; tc < tile_cols; ++tc) {
    const int64_t first = tc * kGemmTile / p.block;
    const int64_t last = (std::min(p.n, (tc + 1) * kGemmTile) - 1) / p.block;
    for (int64_t bk = 0; bk < p.block_depth; ++bk) {
      for (int64_t bj = first; bj <= last; ++bj) {
        b_tiles[bk * tile_cols + tc] |= b_flags[bk * p.block_cols + bj];
      }
    }
  }
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_a_tiles, context.Allocate(a_tiles.size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_b_tiles, context.Allocate(b_tiles.size()));
  MATRIXD_RETURN_IF_ERROR(context.Upload(a_tiles.data(), device_a_tiles, a_tiles.size()));
  MATRIXD_RETURN_IF_ERROR(context.Upload(b_tiles.data(), device_b_tiles, b_tiles.size()));
  const SparseSlabs slabs{device_a_tiles.as<uint8_t>(),
                          device_b_tiles.as<uint8_t>(),
                          p.block_depth,
                          tile_cols,
                          p.block,
                          p.k};

  // Bands of tile rows of at most ~2^36 dense multiply-adds, with a cancellation check between.
  constexpr double kBandMultiplyAdds = 1ull << 36;
  const double per_tile_row =
      static_cast<double>(kGemmTile) * static_cast<double>(p.n) * static_cast<double>(p.k);
  const int64_t band = std::clamp<int64_t>(static_cast<int64_t>(kBandMultiplyAdds / per_tile_row),
                                           1, kGemmMaxTileRows);
  MATRIXD_ASSIGN_OR_RETURN(BlockingEvent band_done, BlockingEvent::Create());
  for (int64_t first = 0; first < tile_rows; first += band) {
    const int64_t rows = std::min(band, tile_rows - first);
    const cudaError_t launched = LaunchUint32Gemm<false, false>(p.m, p.n, p.k, a, b, c, first, rows,
                                                                slabs, context.stream());
    MATRIXD_CUDA_RETURN_IF_ERROR(launched);
    if (first + rows < tile_rows) {
      MATRIXD_RETURN_IF_ERROR(band_done.WaitFor(context.stream()));
      if (IsCancelled(control)) return Cancelled();
      ReportProgress(control, static_cast<double>(first + rows) / static_cast<double>(tile_rows));
    }
  }
  return absl::OkStatus();
}

// ---- Floating types: cuBLAS ----

template <typename T>
struct BatchedGemm;
template <>
struct BatchedGemm<float> {
  static constexpr auto call = &cublasSgemmBatched;
};
template <>
struct BatchedGemm<double> {
  static constexpr auto call = &cublasDgemmBatched;
};
template <>
struct BatchedGemm<std::complex<float>> {
  static constexpr auto call = &cublasCgemmBatched;
};
template <>
struct BatchedGemm<std::complex<double>> {
  static constexpr auto call = &cublasZgemmBatched;
};

// The block products of op(A) op(B) for cuBLAS, gathered k-block by k-block (in ascending k) into
// chunks of about kChunkProducts. Within a chunk, the products into one C block are numbered in k
// order: product number r of every C block goes into round r. A round writes each C block at
// most once, so one gemmBatched call per round and block shape (full, or cut by the bottom or
// right edge) runs it without races, and the rounds follow each other on the stream. That takes a
// few large calls where one call per k-block would take hundreds of small ones.
// C_blk += A_blk B_blk is, in cuBLAS's column-major terms, C_blk^T += B_blk^T A_blk^T: the B block
// (leading dimension n) goes first, the A block (leading dimension k) second.
template <typename T>
class BlockProducts {
 public:
  // At most about this many products (3 device pointers each) per chunk; a single k-block with
  // more makes a chunk of its own.
  static constexpr int64_t kChunkProducts = int64_t{1} << 20;

  BlockProducts(const Problem& p, const PairLists& lists, const T* a, const T* b, T* c,
                int64_t total_products, DeviceContext& context, JobControl* control)
      : p_(p),
        lists_(lists),
        a_(a),
        b_(b),
        c_(c),
        total_products_(total_products),
        context_(context),
        control_(control),
        next_round_(static_cast<size_t>(p.block_rows * p.block_cols), 0) {}

  // Runs every product, chunk by chunk, with a cancellation check between chunks.
  absl::Status Run() {
    int64_t pending = 0;
    for (int64_t bk = 0; bk < p_.block_depth; ++bk) {
      const int64_t products = static_cast<int64_t>(lists_.a_rows[bk].size()) *
                               static_cast<int64_t>(lists_.b_cols[bk].size());
      if (products == 0) continue;
      if (pending > 0 && pending + products > kChunkProducts) {
        MATRIXD_RETURN_IF_ERROR(RunChunk(/*more_follow=*/true));
        pending = 0;
      }
      chunk_.push_back(bk);
      pending += products;
    }
    return RunChunk(/*more_follow=*/false);
  }

 private:
  // Block shapes: bit 0 set for the last block row when it is cut short, bit 1 for the last
  // block column likewise.
  static constexpr int kShapes = 4;

  int ShapeOf(int64_t bi, int64_t bj) const {
    const bool edge_row = p_.m % p_.block != 0 && bi == p_.block_rows - 1;
    const bool edge_col = p_.n % p_.block != 0 && bj == p_.block_cols - 1;
    return (edge_row ? 1 : 0) | (edge_col ? 2 : 0);
  }

  // Calls visit(bi, bk, bj, round) for every product of the chunk, in k order.
  template <typename Visit>
  void ForEachProduct(const Visit& visit) {
    for (const int64_t bk : chunk_) {
      for (const int64_t bi : lists_.a_rows[bk]) {
        for (const int64_t bj : lists_.b_cols[bk]) {
          visit(bi, bk, bj, next_round_[bi * p_.block_cols + bj]++);
        }
      }
    }
    // Back to zero for the next chunk.
    for (const int64_t bk : chunk_) {
      for (const int64_t bi : lists_.a_rows[bk]) {
        for (const int64_t bj : lists_.b_cols[bk]) next_round_[bi * p_.block_cols + bj] = 0;
      }
    }
  }

  absl::Status RunChunk(bool more_follow) {
    if (chunk_.empty()) return absl::OkStatus();
    // Count the products of each (round, shape), then place each at its bucket's next slot.
    std::vector<int64_t> bucket_sizes;
    ForEachProduct([&](int64_t bi, int64_t, int64_t bj, int32_t round) {
      const size_t bucket = static_cast<size_t>(round) * kShapes + ShapeOf(bi, bj);
      if (bucket >= bucket_sizes.size()) bucket_sizes.resize(bucket + 1, 0);
      ++bucket_sizes[bucket];
    });
    std::vector<int64_t> bucket_first(bucket_sizes.size() + 1, 0);
    for (size_t q = 0; q < bucket_sizes.size(); ++q) {
      bucket_first[q + 1] = bucket_first[q] + bucket_sizes[q];
    }
    const int64_t count = bucket_first.back();
    // Layout, on the host and the device: [B pointers | A pointers | C pointers].
    std::vector<const void*> pointers(static_cast<size_t>(3 * count));
    std::vector<int64_t> next = bucket_first;
    ForEachProduct([&](int64_t bi, int64_t bk, int64_t bj, int32_t round) {
      const size_t bucket = static_cast<size_t>(round) * kShapes + ShapeOf(bi, bj);
      const int64_t slot = next[bucket]++;
      pointers[slot] = b_ + bk * p_.block * p_.n + bj * p_.block;
      pointers[count + slot] = a_ + bi * p_.block * p_.k + bk * p_.block;
      pointers[2 * count + slot] = c_ + bi * p_.block * p_.n + bj * p_.block;
    });
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device,
                             context_.Allocate(pointers.size() * sizeof(void*)));
    MATRIXD_RETURN_IF_ERROR(
        context_.Upload(pointers.data(), device, pointers.size() * sizeof(void*)));
    using Device = typename LibraryTraits<T>::Device;
    const Device one = LibraryTraits<T>::One();
    void** raw = device.as<void*>();
    const auto* const* b_pointers = reinterpret_cast<const Device* const*>(raw);
    const auto* const* a_pointers = reinterpret_cast<const Device* const*>(raw + count);
    auto* const* c_pointers = reinterpret_cast<Device* const*>(raw + 2 * count);
    // Every product of the chunk has the depth of its k-block: chunks of several k-blocks hold
    // only full-depth ones unless the last k-block (cut short) is among them, so the depth is
    // looked up per bucket from its first product.
    for (size_t bucket = 0; bucket < bucket_sizes.size(); ++bucket) {
      int64_t first = bucket_first[bucket];
      const int64_t end = bucket_first[bucket + 1];
      const int shape = static_cast<int>(bucket % kShapes);
      const int rows = static_cast<int>((shape & 1) != 0 ? p_.Extent(p_.block_rows - 1, p_.m)
                                                         : std::min(p_.block, p_.m));
      const int cols = static_cast<int>((shape & 2) != 0 ? p_.Extent(p_.block_cols - 1, p_.n)
                                                         : std::min(p_.block, p_.n));
      while (first < end) {
        // A run of products of one depth (the last k-block may be cut short).
        const int64_t depth = DepthOf(pointers[count + first]);
        int64_t last = first + 1;
        while (last < end && DepthOf(pointers[count + last]) == depth) ++last;
        MATRIXD_CUDA_RETURN_IF_ERROR(BatchedGemm<T>::call(
            context_.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, cols, rows, static_cast<int>(depth), &one,
            b_pointers + first, static_cast<int>(p_.n), a_pointers + first, static_cast<int>(p_.k),
            &one, c_pointers + first, static_cast<int>(p_.n), static_cast<int>(last - first)));
        first = last;
      }
    }
    // `device` is freed in stream order, after the calls that read it.
    done_ += count;
    chunk_.clear();
    if (!more_follow) return absl::OkStatus();
    // Wait for this chunk so that a cancel stops the product between chunks.
    if (!chunk_done_.has_value()) {
      MATRIXD_ASSIGN_OR_RETURN(BlockingEvent event, BlockingEvent::Create());
      chunk_done_.emplace(std::move(event));
    }
    MATRIXD_RETURN_IF_ERROR(chunk_done_->WaitFor(context_.stream()));
    if (IsCancelled(control_)) return Cancelled();
    ReportProgress(control_, static_cast<double>(done_) / static_cast<double>(total_products_));
    return absl::OkStatus();
  }

  // The depth of the k-block that the A block at `a_block` starts in.
  int64_t DepthOf(const void* a_block) const {
    const int64_t column = (static_cast<const T*>(a_block) - a_) % p_.k;
    return p_.Extent(column / p_.block, p_.k);
  }

  const Problem& p_;
  const PairLists& lists_;
  const T* const a_;
  const T* const b_;
  T* const c_;
  const int64_t total_products_;
  DeviceContext& context_;
  JobControl* const control_;
  std::vector<int32_t> next_round_;  // per C block: its number of products so far in the chunk
  std::vector<int64_t> chunk_;       // the k-blocks of the chunk being gathered
  std::optional<BlockingEvent> chunk_done_;
  int64_t done_ = 0;
};

template <typename T>
absl::Status FloatingProducts(const Problem& p, const T* a, const T* b, T* c,
                              const PairLists& lists, int64_t total_products, bool allow_tf32,
                              DeviceContext& context, JobControl* control) {
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
  if constexpr (std::is_same_v<T, float>) {
    if (allow_tf32) mode = CUBLAS_TF32_TENSOR_OP_MATH;
  }
  MATRIXD_ASSIGN_OR_RETURN(ScopedMathMode math_mode, ScopedMathMode::Set(context.cublas(), mode));
  return BlockProducts<T>(p, lists, a, b, c, total_products, context, control).Run();
}

template <typename T>
absl::StatusOr<MultiplyResult> BlockSparseTyped(const MatrixView& a, const MatrixView& b,
                                                const MultiplyOptions& options,
                                                DeviceContext& context, JobControl* control) {
  Problem p;
  p.m = options.transpose_a ? a.cols : a.rows;
  p.k = options.transpose_a ? a.rows : a.cols;
  p.n = options.transpose_b ? b.rows : b.cols;
  p.block = options.block_size;
  p.block_rows = CeilDiv(p.m, p.block);
  p.block_depth = CeilDiv(p.k, p.block);
  p.block_cols = CeilDiv(p.n, p.block);

  MultiplyResult result;
  result.block_products_total = p.block_rows * p.block_depth * p.block_cols;
  result.c = Matrix::ForOverwrite(p.m, p.n, a.dtype);  // downloaded in full
  DeviceBuffer a_upload, a_transposed, b_upload, b_transposed;
  MATRIXD_ASSIGN_OR_RETURN(const void* op_a,
                           UploadOperand(a, options.transpose_a, context, a_upload, a_transposed));
  MATRIXD_ASSIGN_OR_RETURN(const void* op_b,
                           UploadOperand(b, options.transpose_b, context, b_upload, b_transposed));
  MATRIXD_ASSIGN_OR_RETURN(std::vector<uint8_t> a_flags,
                           NonZeroBlocks<T>(op_a, p.m, p.k, p.block, context, &result.stats));
  MATRIXD_ASSIGN_OR_RETURN(std::vector<uint8_t> b_flags,
                           NonZeroBlocks<T>(op_b, p.k, p.n, p.block, context, &result.stats));
  if (IsCancelled(control)) return Cancelled();
  const PairLists lists = ListPairs(p, a_flags, b_flags, result, kIsComplexType<T> ? 8.0 : 2.0);

  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_c, context.Allocate(result.c.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  MATRIXD_RETURN_IF_ERROR(timer.Start(context.stream()));
  const absl::Status status = [&]() -> absl::Status {
    if constexpr (std::is_same_v<T, uint32_t>) {
      // The kernel writes every entry of C, zeros included.
      return Uint32Products(p, static_cast<const uint32_t*>(op_a),
                            static_cast<const uint32_t*>(op_b), device_c.as<uint32_t>(), a_flags,
                            b_flags, context, control);
    } else {
      MATRIXD_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(device_c.data(), 0, result.c.byte_size(), context.stream()));
      return FloatingProducts<T>(p, static_cast<const T*>(op_a), static_cast<const T*>(op_b),
                                 device_c.as<T>(), lists, result.block_products, options.allow_tf32,
                                 context, control);
    }
  }();
  if (!status.ok()) return status;
  MATRIXD_RETURN_IF_ERROR(timer.Stop(context.stream()));
  MATRIXD_ASSIGN_OR_RETURN(double seconds, timer.Seconds());
  result.stats.bytes_moved = a.byte_size() + b.byte_size() + result.c.byte_size();
  if (std::is_same_v<T, float> && options.allow_tf32) result.stats.precision = "tf32";
  // The products of the non-zero block pairs, after the two scans (a transpose, when op() asks
  // for one, is not recorded).
  result.stats.kernels.push_back(
      KernelRecord{std::is_same_v<T, uint32_t> ? "uint32_block_gemm" : "cublas_gemm_batched",
                   seconds, result.stats.bytes_moved, result.stats.flops});
  if constexpr (!std::is_same_v<T, uint32_t>) {
    if (options.verify) {
      // The check of the dense product: the operands as uploaded (op() already applied), C before
      // it is downloaded.
      const auto on_device = [&](int64_t rows, int64_t cols, const void* data) {
        return DeviceMatrixView(rows, cols, a.dtype, data);
      };
      MultiplyOptions plain = options;
      plain.transpose_a = false;
      plain.transpose_b = false;
      MATRIXD_RETURN_IF_ERROR(VerifyProduct(on_device(p.m, p.k, op_a), on_device(p.k, p.n, op_b),
                                            on_device(p.m, p.n, device_c.data()), plain, context,
                                            &result));
    }
  }
  MATRIXD_RETURN_IF_ERROR(
      context.Download(device_c, result.c.mutable_bytes(), result.c.byte_size()));
  return result;
}

}  // namespace

absl::StatusOr<MultiplyResult> BlockSparseMultiply(const MatrixView& a, const MatrixView& b,
                                                   const MultiplyOptions& options,
                                                   DeviceContext& context, JobControl* control) {
  if (IsCancelled(control)) return Cancelled();
  const int64_t inner_a = options.transpose_a ? a.rows : a.cols;
  const int64_t inner_b = options.transpose_b ? b.cols : b.rows;
  if (options.block_size <= 0 || a.dtype != b.dtype || inner_a != inner_b || a.size() == 0 ||
      b.size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("block-sparse product of op(a) with ", inner_a, " columns (",
                     DTypeName(a.dtype), ") and op(b) with ", inner_b, " rows (",
                     DTypeName(b.dtype), "), block_size ", options.block_size, ", is not defined"));
  }
  // cuBLAS takes int dimensions and leading dimensions.
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (a.rows > kIntMax || a.cols > kIntMax || b.rows > kIntMax || b.cols > kIntMax) {
    return absl::InvalidArgumentError(absl::StrCat("operands ", a.rows, "x", a.cols, " and ",
                                                   b.rows, "x", b.cols,
                                                   " exceed the int range of cuBLAS"));
  }
  switch (a.dtype) {
    case DType::kFloat32:
      return BlockSparseTyped<float>(a, b, options, context, control);
    case DType::kFloat64:
      return BlockSparseTyped<double>(a, b, options, context, control);
    case DType::kComplex64:
      return BlockSparseTyped<std::complex<float>>(a, b, options, context, control);
    case DType::kComplex128:
      return BlockSparseTyped<std::complex<double>>(a, b, options, context, control);
    case DType::kUInt32:
      return BlockSparseTyped<uint32_t>(a, b, options, context, control);
    case DType::kInt64:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("a.dtype is ", DTypeName(a.dtype), "; want floating or uint32"));
}

}  // namespace matrixd::cuda
