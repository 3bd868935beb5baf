// Products block by block on the CPU: the UINT32 block kernel (wrap-around arithmetic, also the
// dense UINT32 product's kernel), a parallel loop over blocks of rows, and the block-sparse product
// that multiplies only pairs of non-zero blocks.
#ifndef MATRIXD_CORE_CPU_BLOCK_SPARSE_H_
#define MATRIXD_CORE_CPU_BLOCK_SPARSE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cpu {

// C += A B in uint32_t arithmetic, i.e. mod 2^32. Row-major with leading dimensions; A is m x k,
// B k x n, C m x n.
void MultiplyAddUInt32(int64_t m, int64_t n, int64_t k, const uint32_t* a, int64_t lda,
                       const uint32_t* b, int64_t ldb, uint32_t* c, int64_t ldc);

// Runs task(i) once for every i in [0, count), on up to `threads` threads (the caller's among
// them), in no fixed order. Once `control` is cancelled no further task starts, and it returns
// false.
template <typename Task>
bool RunParallel(int64_t count, int threads, JobControl* control, const Task& task) {
  std::atomic<int64_t> next{0};
  std::atomic<bool> cancelled{false};
  const auto work = [&] {
    for (;;) {
      if (IsCancelled(control)) {
        cancelled.store(true, std::memory_order_relaxed);
        return;
      }
      const int64_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count) return;
      task(i);
    }
  };
  const int64_t helpers = std::max<int64_t>(0, std::min<int64_t>(threads, count) - 1);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(helpers));
  for (int64_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
  return !cancelled.load(std::memory_order_relaxed);
}

// C = A B computing only the products of non-zero blocks: A and B are cut into block_size x
// block_size blocks (smaller at the right and bottom edges), and C(i,j) accumulates A(i,k) B(k,j)
// only where both blocks hold a non-zero entry, block rows spread over up to `threads` threads.
// REQUIRES: a.cols == b.rows; a and b of one dtype, floating or UINT32; block_size > 0.
// Fills c, block_products, block_products_total and stats.flops (of the products run); CANCELLED
// when `control` is cancelled part-way.
absl::StatusOr<MultiplyResult> BlockSparseMultiply(const MatrixView& a, const MatrixView& b,
                                                   int64_t block_size, int threads,
                                                   JobControl* control);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_BLOCK_SPARSE_H_
