// Strided-batched float64 products C := alpha A B + beta C through cuBLASLt, with the algorithm
// for each shape chosen once per device and process (among the heuristic's candidates, the first
// with the tile measured fastest for the modular LU's trailing updates, else the heuristic's
// first) and cached; where cuBLASLt offers no algorithm, through cublasDgemmStridedBatched
// instead. Products of small integers whose every partial sum stays below 2^53 are exact in
// float64, so then every algorithm (any tile, any split of the sum) gives the same bits.
#ifndef MATRIXD_CORE_CUDA_LT_BATCHED_DGEMM_H_
#define MATRIXD_CORE_CUDA_LT_BATCHED_DGEMM_H_

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "absl/status/statusor.h"
#include "core/cuda/cuda_status.h"

namespace matrixd::cuda {

// Owns one cuBLASLt object (a handle, a matmul descriptor, a matrix layout or a preference),
// destroyed with `Destroy`. Moved, never copied.
template <typename T, cublasStatus_t (*Destroy)(T)>
class LtOwned {
 public:
  LtOwned() = default;
  explicit LtOwned(T object) : object_(object) {}
  LtOwned(LtOwned&& other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
  LtOwned& operator=(LtOwned&& other) noexcept {
    if (this != &other) {
      Reset();
      object_ = std::exchange(other.object_, nullptr);
    }
    return *this;
  }
  LtOwned(const LtOwned&) = delete;
  LtOwned& operator=(const LtOwned&) = delete;
  ~LtOwned() { Reset(); }

  T get() const { return object_; }

 private:
  void Reset() {
    if (object_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(Destroy(object_));
    object_ = nullptr;
  }
  T object_ = nullptr;
};
using LtHandle = LtOwned<cublasLtHandle_t, cublasLtDestroy>;

// Creates a cuBLASLt handle on the current device.
absl::StatusOr<LtHandle> CreateLtHandle();

// One strided batch of column-major products: C (m x n, leading dimension ldc) of each matrix
// from A (m x k, lda) and B (k x n, ldb), no transposes, matrix i's operands stride_* elements
// after matrix i - 1's. The alignments (bytes, a power of two up to 256) are those every matrix's
// pointers have (LtAlignment).
struct BatchedDgemmShape {
  int m = 0;
  int n = 0;
  int k = 0;
  int lda = 0;
  int ldb = 0;
  int ldc = 0;
  int64_t stride_a = 0;
  int64_t stride_b = 0;
  int64_t stride_c = 0;
  int batch = 0;
  uint32_t align_a = 8;
  uint32_t align_b = 8;
  uint32_t align_c = 8;
  friend bool operator==(const BatchedDgemmShape&, const BatchedDgemmShape&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const BatchedDgemmShape& s) {
    return H::combine(std::move(h), s.m, s.n, s.k, s.lda, s.ldb, s.ldc, s.stride_a, s.stride_b,
                      s.stride_c, s.batch, s.align_a, s.align_b, s.align_c);
  }
};

// The alignment in bytes (a power of two, at most 256) of every matrix of a batch whose first
// float64 operand is at `address` and whose matrices are `stride` elements apart.
uint32_t LtAlignment(uintptr_t address, int64_t stride);

// The tile of cuBLASLt's algorithms that ran the modular LU's trailing update fastest on an H100
// (docs/benchmarks.md: 503 matrices of order 1000, k = 128: 30.6 TFLOP/s against
// cublasDgemmStridedBatched's 27.0).
inline constexpr uint32_t kPreferredLtTile = CUBLASLT_MATMUL_TILE_128x64;

// Which of the heuristic's candidates (their tiles, best first) to take: the first with
// `preferred`, else the first; -1 when there are none.
int ChooseLtCandidate(std::span<const uint32_t> tiles, uint32_t preferred);

// The workspace the chosen algorithms may ask for, at most.
inline constexpr size_t kLtWorkspaceBytes = size_t{4} << 20;

// C := alpha A B + beta C for every matrix of `shape`'s batch on `stream`, through `lt` with the
// algorithm cached for (`device`, shape) (asked of the heuristic at the first product of that
// shape: workspace at most min(workspace_bytes, kLtWorkspaceBytes)), or through
// cublasDgemmStridedBatched on `fallback` (bound to `stream`, in the math mode the caller set)
// when cuBLASLt has none. C may not overlap A or B. Errors name the failing call.
absl::Status LtBatchedDgemm(cublasLtHandle_t lt, cublasHandle_t fallback, cudaStream_t stream,
                            int device, const BatchedDgemmShape& shape, double alpha,
                            const double* a, const double* b, double beta, double* c,
                            void* workspace, size_t workspace_bytes);

// Whether the product of `shape` on `device` went (or goes) through cuBLASLt: true after a product
// of that shape ran with a cuBLASLt algorithm, false when it fell back or has not run. For tests.
bool LtChoiceCached(int device, const BatchedDgemmShape& shape);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_LT_BATCHED_DGEMM_H_
