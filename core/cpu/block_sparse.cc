#include "core/cpu/block_sparse.h"

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/lapack_types.h"

namespace matrixd::cpu {
namespace {

// The UINT32 kernel walks B in panels of kDepth rows x kWidth columns (256 KiB), which stay in L2
// while every row of A passes over them.
constexpr int64_t kDepth = 128;
constexpr int64_t kWidth = 512;

// Above this block size one gemm call is worth OpenBLAS's own threads; below it the calls are too
// small for that and the block rows are spread over our threads instead.
constexpr int64_t kLargestThreadedBlock = 64;

// c[0, n) += a * b[0, n): the innermost loop, which the compiler vectorises.
void AddScaledRow(uint32_t a, const uint32_t* __restrict b, uint32_t* __restrict c, int64_t n) {
  for (int64_t j = 0; j < n; ++j) c[j] += a * b[j];
}

int64_t CeilDiv(int64_t x, int64_t d) { return x / d + (x % d != 0 ? 1 : 0); }

// One flag per block of the rows x cols row-major matrix x: does the block hold a non-zero entry.
template <typename T>
std::vector<char> NonZeroBlocks(const T* x, int64_t rows, int64_t cols, int64_t block) {
  const int64_t block_cols = CeilDiv(cols, block);
  std::vector<char> non_zero(static_cast<size_t>(CeilDiv(rows, block) * block_cols), 0);
  for (int64_t i = 0; i < rows; ++i) {
    char* flags = non_zero.data() + (i / block) * block_cols;
    const T* row = x + i * cols;
    for (int64_t bj = 0; bj < block_cols; ++bj) {
      if (flags[bj]) continue;
      const int64_t begin = bj * block;
      const int64_t end = std::min(cols, begin + block);
      flags[bj] = std::any_of(row + begin, row + end, [](const T& v) { return v != T(0); });
    }
  }
  return non_zero;
}

// C += A B on one block, row-major with leading dimensions.
template <typename T>
void BlockMultiplyAdd(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                      int64_t ldb, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, uint32_t>) {
    MultiplyAddUInt32(m, n, k, a, lda, b, ldb, c, ldc);
  } else {
    Gemm<T>(CblasNoTrans, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
            static_cast<blasint>(k), T(1), a, static_cast<blasint>(lda), b,
            static_cast<blasint>(ldb), T(1), c, static_cast<blasint>(ldc));
  }
}

template <typename T>
absl::StatusOr<MultiplyResult> BlockSparseTyped(const MatrixView& a, const MatrixView& b,
                                                int64_t block, int threads, JobControl* control) {
  const int64_t m = a.rows;
  const int64_t k = a.cols;
  const int64_t n = b.cols;
  const int64_t block_rows = CeilDiv(m, block);
  const int64_t block_depth = CeilDiv(k, block);
  const int64_t block_cols = CeilDiv(n, block);
  const T* a_data = a.As<T>().data();
  const T* b_data = b.As<T>().data();
  const std::vector<char> a_non_zero = NonZeroBlocks(a_data, m, k, block);
  const std::vector<char> b_non_zero = NonZeroBlocks(b_data, k, n, block);
  const auto extent = [block](int64_t index, int64_t size) {
    return std::min(block, size - index * block);
  };

  // For each block row of B, its non-zero blocks and their total width.
  std::vector<std::vector<int64_t>> b_blocks(static_cast<size_t>(block_depth));
  std::vector<double> b_width(static_cast<size_t>(block_depth), 0.0);
  for (int64_t bk = 0; bk < block_depth; ++bk) {
    for (int64_t bj = 0; bj < block_cols; ++bj) {
      if (!b_non_zero[bk * block_cols + bj]) continue;
      b_blocks[bk].push_back(bj);
      b_width[bk] += static_cast<double>(extent(bj, n));
    }
  }

  MultiplyResult result;
  result.block_products_total = block_rows * block_depth * block_cols;
  const double flops_per_update = kIsComplex<T> ? 8.0 : 2.0;
  for (int64_t bi = 0; bi < block_rows; ++bi) {
    for (int64_t bk = 0; bk < block_depth; ++bk) {
      if (!a_non_zero[bi * block_depth + bk]) continue;
      result.block_products += static_cast<int64_t>(b_blocks[bk].size());
      result.stats.flops += flops_per_update * static_cast<double>(extent(bi, m)) *
                            static_cast<double>(extent(bk, k)) * b_width[bk];
    }
  }

  result.c = Matrix(m, n, a.dtype);
  // Cleared explicitly: Matrix's storage (std::max_align_t) can keep stale padding bytes.
  std::memset(result.c.mutable_bytes(), 0, result.c.byte_size());
  T* c_data = result.c.As<T>().data();
  const bool own_threads = std::is_same_v<T, uint32_t> || block <= kLargestThreadedBlock;
  // Each task owns one block row of C, so no two threads write the same element.
  const bool completed =
      RunParallel(block_rows, own_threads ? threads : 1, control, [&](int64_t bi) {
        const int64_t i0 = bi * block;
        const int64_t rows = extent(bi, m);
        for (int64_t bk = 0; bk < block_depth; ++bk) {
          if (!a_non_zero[bi * block_depth + bk]) continue;
          const int64_t p0 = bk * block;
          const int64_t depth = extent(bk, k);
          for (const int64_t bj : b_blocks[bk]) {
            const int64_t j0 = bj * block;
            BlockMultiplyAdd<T>(rows, extent(bj, n), depth, a_data + i0 * k + p0, k,
                                b_data + p0 * n + j0, n, c_data + i0 * n + j0, n);
          }
        }
      });
  if (!completed) return absl::CancelledError("block-sparse multiplication cancelled");
  return result;
}

}  // namespace

void MultiplyAddUInt32(int64_t m, int64_t n, int64_t k, const uint32_t* a, int64_t lda,
                       const uint32_t* b, int64_t ldb, uint32_t* c, int64_t ldc) {
  for (int64_t p0 = 0; p0 < k; p0 += kDepth) {
    const int64_t p1 = std::min(k, p0 + kDepth);
    for (int64_t j0 = 0; j0 < n; j0 += kWidth) {
      const int64_t width = std::min(n - j0, kWidth);
      for (int64_t i = 0; i < m; ++i) {
        const uint32_t* a_row = a + i * lda;
        uint32_t* c_row = c + i * ldc + j0;
        for (int64_t p = p0; p < p1; ++p) {
          // Skipping zeros costs a branch per row of the panel and saves the whole row update on
          // sparse input.
          if (a_row[p] != 0) AddScaledRow(a_row[p], b + p * ldb + j0, c_row, width);
        }
      }
    }
  }
}

absl::StatusOr<MultiplyResult> BlockSparseMultiply(const MatrixView& a, const MatrixView& b,
                                                   int64_t block_size, int threads,
                                                   JobControl* control) {
  if (block_size <= 0 || a.cols != b.rows || a.dtype != b.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block-sparse product of ", a.rows, "x", a.cols, " ", DTypeName(a.dtype), " and ", b.rows,
        "x", b.cols, " ", DTypeName(b.dtype), " with block_size ", block_size, " is not defined"));
  }
  switch (a.dtype) {
    case DType::kFloat32:
      return BlockSparseTyped<float>(a, b, block_size, threads, control);
    case DType::kFloat64:
      return BlockSparseTyped<double>(a, b, block_size, threads, control);
    case DType::kComplex64:
      return BlockSparseTyped<std::complex<float>>(a, b, block_size, threads, control);
    case DType::kComplex128:
      return BlockSparseTyped<std::complex<double>>(a, b, block_size, threads, control);
    case DType::kUInt32:
      return BlockSparseTyped<uint32_t>(a, b, block_size, threads, control);
    case DType::kInt64:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("a.dtype is ", DTypeName(a.dtype), "; want floating or uint32"));
}

}  // namespace matrixd::cpu
